// Command anchor is the yardstick the load benchmarks are measured
// against, in the same run: a bare net/http server on a SQLite file (WAL,
// synchronous=FULL, a reader pool separate from the one writer, as keelpay
// uses) with no keelpay code. GET /rows/{id} reads one ~580-byte JSON row by
// primary key; POST /rows inserts one row in its own durable transaction.
//
//	go run ./bench/anchor -addr 127.0.0.1:18081 -db /tmp/anchor.db
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync/atomic"

	_ "modernc.org/sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	path := flag.String("db", "anchor.db", "SQLite file")
	flag.Parse()
	dsn := "file:" + *path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		log.Fatal(err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	if _, err := w.Exec(`CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	body := `{"id":"pi_anchor","object":"payment_intent","status":"succeeded","amount":2500,"currency":"EUR",` +
		`"reference":null,"card":null,"payment_method":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2030,"saved":false},` +
		`"authorization_code":"A1B2C3","order_id":"ord_0000000000000000","refund":null,"succeeded_at":"2026-11-21T10:00:00Z",` +
		`"customer":{"id":"cus_42"},"description":"","metadata":{},"next_action":null,"created_at":"2026-11-21T10:00:00Z",` +
		`"expires_at":"2026-11-22T10:00:00Z","` + strings.Repeat("x", 40) + `":true}`
	if _, err := w.Exec(`INSERT OR REPLACE INTO rows (id, body) VALUES ('pi_anchor', ?)`, body); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /rows/{id}", func(rw http.ResponseWriter, req *http.Request) {
		var b string
		if err := r.QueryRowContext(req.Context(), `SELECT body FROM rows WHERE id = ?`, req.PathValue("id")).Scan(&b); err != nil {
			http.Error(rw, err.Error(), http.StatusNotFound)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(rw, b)
	})
	var n atomic.Int64
	mux.HandleFunc("POST /rows", func(rw http.ResponseWriter, req *http.Request) {
		if _, err := w.ExecContext(req.Context(), `INSERT INTO rows (id, body) VALUES (?, ?)`, fmt.Sprintf("row_%d", n.Add(1)), body); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintln(rw, `{"ok":true}`)
	})
	log.Fatal(http.ListenAndServe(*addr, mux))
}
