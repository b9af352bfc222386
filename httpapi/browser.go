package httpapi

import (
	"bytes"
	"crypto/sha512"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	fieldrules "github.com/keelpay/keelpay/internal/fields"
	"github.com/keelpay/keelpay/provider"
)

// The browser's side of keelpay (docs/api.md, "Endpoints"): the script a
// store's page loads, and the hosted card field, the page the script shows
// in an iframe. The card field is served from keelpay's origin and makes
// every API call of the browser itself, with same-origin requests; the
// store's page talks to it only with postMessage, so a card number never
// exists in the store's page.

// Paths of the browser's routes.
const (
	scriptPath          = "/js/v1/keelpay.js"
	scriptIntegrityPath = scriptPath + ".integrity"
	cardFieldPath       = "/elements/v1/card"
)

//go:embed assets/keelpay.js assets/card.html assets/card.js assets/card.css
var assetFS embed.FS

// browserAssets are the embedded files, read and hashed once at start.
type browserAssets struct {
	script []byte
	// integrity is the Subresource Integrity value of script,
	// "sha384-<base64>", which a store pins in its <script> tag.
	integrity string
	etag      string
	card      *template.Template
	cardJS    template.JS
	cardCSS   template.CSS
	errorPage *template.Template
}

var browserFiles = loadAssets()

func loadAssets() *browserAssets {
	read := func(name string) []byte {
		b, err := assetFS.ReadFile("assets/" + name)
		if err != nil {
			panic("httpapi: embedded asset: " + err.Error())
		}
		return b
	}
	script := read("keelpay.js")
	sum := sha512.Sum384(script)
	return &browserAssets{
		script:    script,
		integrity: "sha384-" + base64.StdEncoding.EncodeToString(sum[:]),
		etag:      `"` + hex.EncodeToString(sum[:16]) + `"`,
		card:      template.Must(template.New("card").Parse(string(read("card.html")))),
		cardJS:    template.JS(read("card.js")),
		cardCSS:   template.CSS(read("card.css")),
		errorPage: template.Must(template.New("error").Parse(errorPageHTML)),
	}
}

// browserRoutes are the browser script and the hosted card field. The
// card field needs the payments service; the script does not.
func (a *api) browserRoutes() []route {
	rs := []route{
		{"GET", scriptPath, authNone, noKey, a.script},
		{"GET", scriptIntegrityPath, authNone, noKey, a.scriptIntegrity},
	}
	if a.cfg.Payments != nil {
		rs = append(rs, route{"GET", cardFieldPath, authNone, noKey, a.cardField})
	}
	return rs
}

// script serves keelpay.js. Stores load it from their own origin with
// integrity and crossorigin="anonymous", and a browser checks the
// integrity of a cross-origin script only when the response allows CORS:
// hence Access-Control-Allow-Origin, harmless on a public file fetched
// without credentials.
func (a *api) script(w http.ResponseWriter, r *http.Request, _ caller) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("ETag", browserFiles.etag)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "keelpay.js", time.Time{}, bytes.NewReader(browserFiles.script))
}

// scriptIntegrity serves the integrity value of keelpay.js as text, for
// the store to pin. It is revalidated on every use, so that it never lags
// behind the script.
func (a *api) scriptIntegrity(w http.ResponseWriter, r *http.Request, _ caller) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", browserFiles.etag)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "keelpay.js.integrity", time.Time{}, strings.NewReader(browserFiles.integrity))
}

// fieldLocales are the languages of the card field; anything else is
// shown in English.
var fieldLocales = []string{"en", "fi", "sv", "de"}

// cardPage is what card.html shows.
type cardPage struct {
	Nonce  string
	Lang   string
	CSS    template.CSS
	JS     template.JS
	Origin string
	Key    string
	// Kind is card_session or payment_intent, Object its id.
	Kind         string
	Object       string
	ClientSecret string
	Name         bool
	// Element is the provider's browser element the page mounts in place
	// of its own card inputs; nil when the provider has none.
	Element *provider.Element
}

// cardField serves the hosted card field:
//
//	GET /elements/v1/card?key=pk_…&card_session=cs_…&client_secret=…&origin=<parent origin>[&name=1][&locale=fi]
//
// with payment_intent=pi_… instead of card_session for a field of an
// intent. The page is shown only to an origin among the object's
// page_origins: they are its frame-ancestors, and origin (the only target
// of its messages) must be one of them. Failures are plain pages without
// any input: a bad address is 400, a key that is not a publishable key
// 401, an unknown object or a wrong client_secret 404, an origin that is
// not allowed 403.
func (a *api) cardField(w http.ResponseWriter, r *http.Request, _ caller) {
	q, err := parseQuery(r.URL.RawQuery, "key", "card_session", "payment_intent", "client_secret", "origin", "name", "locale")
	if err != nil {
		a.fieldError(w, http.StatusBadRequest, "The address of the card field is not valid.")
		return
	}
	sessionID, isSession := q["card_session"]
	intentID, isIntent := q["payment_intent"]
	origin, originOK := fieldrules.PageOrigin(q["origin"])
	name, nameOK := map[string]bool{"": false, "0": false, "1": true}[q["name"]]
	if isSession == isIntent || !originOK || !nameOK {
		a.fieldError(w, http.StatusBadRequest,
			"The card field needs key, client_secret, origin and either card_session or payment_intent.")
		return
	}
	locale := "en"
	if slices.Contains(fieldLocales, q["locale"]) {
		locale = q["locale"]
	}

	ctx := r.Context()
	st, err := a.cfg.Stores.AuthenticatePublishable(ctx, q["key"])
	if err != nil {
		if keelpay.ErrorCode(err) == keelpay.CodeInvalidAPIKey {
			a.fieldError(w, http.StatusUnauthorized, "The publishable key is not valid.")
			return
		}
		a.fieldInternal(w, r, err)
		return
	}
	setStore(r, st.ID)
	page := cardPage{Origin: origin, Key: q["key"], Name: name, Lang: locale}
	var secret string
	var allowed []string
	if isSession {
		cs, err := a.cfg.Payments.GetCardSession(ctx, st, sessionID)
		if err != nil {
			a.fieldLookupError(w, r, err, keelpay.CodeCardSessionNotFound)
			return
		}
		page.Kind, page.Object, secret, allowed = "card_session", cs.ID, cs.ClientSecret, cs.PageOrigins
	} else {
		pi, err := a.cfg.Payments.GetIntent(ctx, st, intentID)
		if err != nil {
			a.fieldLookupError(w, r, err, keelpay.CodePaymentIntentNotFound)
			return
		}
		page.Kind, page.Object, secret, allowed = "payment_intent", pi.ID, pi.ClientSecret, pi.PageOrigins
	}
	if !secretMatches(secret, q["client_secret"]) {
		a.fieldError(w, http.StatusNotFound, "The card field's object does not exist.")
		return
	}
	if !slices.Contains(allowed, origin) {
		a.fieldError(w, http.StatusForbidden, "This page's origin is not one of the page_origins of the card field's object.")
		return
	}
	// With a provider whose own element captures the card, the page
	// mounts it: the card number then goes to the provider, never here.
	el, err := a.cfg.Payments.BrowserElement(ctx, st)
	if err != nil {
		if keelpay.ErrorCode(err) != "" { // provider_api_unavailable, platform_access_pending
			a.fieldError(w, http.StatusServiceUnavailable, "The payment provider cannot be reached now; try again shortly.")
			return
		}
		a.fieldInternal(w, r, err)
		return
	}
	var sources elementSources
	if el != nil {
		if sources, err = cspSources(el); err != nil {
			a.fieldInternal(w, r, err)
			return
		}
		page.Element = el
	}
	page.ClientSecret = secret
	page.Nonce = keelpay.NewID("")
	page.CSS, page.JS = browserFiles.cardCSS, browserFiles.cardJS

	h := w.Header()
	// page_origins are canonical origins (no spaces, semicolons or
	// quotes), so they are safe in the header as they are; so are the
	// element's sources, checked by cspSources.
	policy := fmt.Sprintf("default-src 'none'; script-src 'nonce-%[1]s'%[2]s; style-src 'nonce-%[1]s'; "+
		"connect-src 'self'%[3]s; ", page.Nonce, sources.script, sources.connect)
	if sources.frame != "" {
		policy += "frame-src" + sources.frame + "; "
	}
	h.Set("Content-Security-Policy", policy+"form-action 'none'; base-uri 'none'; frame-ancestors "+strings.Join(allowed, " "))
	writePageHeaders(h)
	var buf bytes.Buffer
	if err := browserFiles.card.Execute(&buf, page); err != nil {
		a.fieldInternal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// elementSources are the Content-Security-Policy sources of a provider's
// element, each list with a leading space, or empty.
type elementSources struct{ script, connect, frame string }

// cspSources returns the sources the card field page allows for el: its
// script's origin and ScriptSources as scripts, ConnectSources, and
// FrameSources. A source with a character that would change the header's
// meaning (space, semicolon, comma, quote) or a script that is not an
// http(s) address is an error.
func cspSources(el *provider.Element) (elementSources, error) {
	var out elementSources
	join := func(list []string) (string, error) {
		var b strings.Builder
		for i, src := range list {
			if src == "" || strings.ContainsAny(src, " \t\r\n;,'\"") {
				return "", fmt.Errorf("httpapi: the provider's element has a source %q that is not a CSP source", src)
			}
			if !slices.Contains(list[:i], src) {
				b.WriteString(" " + src)
			}
		}
		return b.String(), nil
	}
	script, err := scriptOrigin(el.ScriptURL)
	if err != nil {
		return out, err
	}
	if out.script, err = join(append([]string{script}, el.ScriptSources...)); err != nil {
		return out, err
	}
	if out.connect, err = join(el.ConnectSources); err != nil {
		return out, err
	}
	out.frame, err = join(el.FrameSources)
	return out, err
}

// scriptOrigin is the origin of an element's script address, which must be
// http or https: scheme://host[:port].
func scriptOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("httpapi: the provider's element script %q is not an http(s) address", s)
	}
	return u.Scheme + "://" + u.Host, nil
}

// secretMatches compares a client_secret in constant time; an object
// always has one, so an empty one never matches.
func secretMatches(want, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

func writePageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// The address carries the client_secret.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// fieldLookupError renders the failure to read the card field's object:
// notFound (the object is not the store's) is a 404 page, anything else
// internal.
func (a *api) fieldLookupError(w http.ResponseWriter, r *http.Request, err error, notFound keelpay.Code) {
	if keelpay.ErrorCode(err) == notFound {
		a.fieldError(w, http.StatusNotFound, "The card field's object does not exist.")
		return
	}
	a.fieldInternal(w, r, err)
}

func (a *api) fieldInternal(w http.ResponseWriter, r *http.Request, err error) {
	a.log.ErrorContext(r.Context(), "internal error", slog.Any("error", err))
	a.fieldError(w, http.StatusInternalServerError, "Internal error.")
}

// fieldError writes a page with a short text for the developer and no
// input. It has no frame-ancestors, so that the text shows where the field
// was meant to be: it carries nothing of the request.
func (a *api) fieldError(w http.ResponseWriter, status int, text string) {
	nonce := keelpay.NewID("")
	h := w.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf("default-src 'none'; style-src 'nonce-%s'; form-action 'none'; base-uri 'none'", nonce))
	writePageHeaders(h)
	w.WriteHeader(status)
	_ = browserFiles.errorPage.Execute(w, struct{ Nonce, Text string }{nonce, text}) // only a write to the client can fail
}

const errorPageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Card field not available</title>
<style nonce="{{.Nonce}}">
body { margin: 0; padding: 8px 0; font: 14px/1.4 system-ui, sans-serif; color: #8a1c12; }
</style>
</head>
<body>
<p role="alert">The card field is not available. {{.Text}}</p>
</body>
</html>
`
