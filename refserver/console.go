package refserver

import (
	"embed"
	"io/fs"
	"net/http"
)

// The sandbox console: one page of plain HTML, CSS and JavaScript, served
// at /sandbox/ in sandbox mode. It calls the API with the secret key the
// developer types, which stays in the page's memory.
//
//go:embed console
var consoleFiles embed.FS

// consoleHandler serves the console's files under /sandbox/.
func consoleHandler() http.Handler {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/sandbox/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	})
}
