package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// stmtCache keeps one prepared statement per query text for a pool.
// Parsing and planning a statement costs SQLite more than running a
// primary-key read (profiled: re-preparing was the largest single cost of
// GET /v1/payment_intents/{id}), so every query goes through it.
// database/sql prepares each statement lazily on each connection it runs on
// and keeps it there. The set of query texts is fixed by the code, so the
// cache is bounded.
type stmtCache struct {
	db *sql.DB
	m  sync.Map // query -> *prepared
}

// prepared is a statement prepared from a query's positional form (see
// positional), with the order in which its arguments bind.
type prepared struct {
	*sql.Stmt
	order []int
}

// args returns args in the order the statement binds them.
func (p *prepared) args(args []any) []any {
	if p.order == nil {
		return args
	}
	out := make([]any, len(p.order))
	for i, n := range p.order {
		if n < 1 || n > len(args) {
			return args // the driver reports the missing argument
		}
		out[i] = args[n-1]
	}
	return out
}

func prepare(ctx context.Context, prep func(context.Context, string) (*sql.Stmt, error), query string) (*prepared, error) {
	text, order := positional(query)
	s, err := prep(ctx, text)
	if err != nil {
		return nil, err
	}
	return &prepared{Stmt: s, order: order}, nil
}

func (c *stmtCache) get(ctx context.Context, query string) (*prepared, error) {
	if s, ok := c.m.Load(query); ok {
		return s.(*prepared), nil
	}
	s, err := prepare(ctx, c.db.PrepareContext, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*prepared), nil
	}
	return s, nil
}

func (c *stmtCache) close() {
	c.m.Range(func(_, s any) bool {
		s.(*prepared).Close()
		return true
	})
}

// positional rewrites the numbered parameters of query (?1, ?2, and bare
// ? as the next number, as SQLite numbers them) into bare ones, and
// returns the number each bare parameter takes, in order; order is nil
// when query has no numbered parameter. modernc's driver reads the name of
// every numbered parameter at every execution and matches it against
// every argument: an allocation per parameter and a quadratic match in
// the writer's goroutine, for an intent's update of some forty
// parameters. Bare parameters bind by position with neither. Quoted
// strings and identifiers are left as they are.
func positional(query string) (string, []int) {
	if !strings.Contains(query, "?") {
		return query, nil
	}
	var b strings.Builder
	var order []int
	numbered, hi := false, 0
	for i := 0; i < len(query); i++ {
		switch c := query[i]; c {
		case '\'', '"':
			j := i + 1
			for j < len(query) && query[j] != c {
				j++
			}
			b.WriteString(query[i:min(j+1, len(query))])
			i = j
		case '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			n := hi + 1
			if j > i+1 {
				n, _ = strconv.Atoi(query[i+1 : j])
				numbered = true
			}
			hi = max(hi, n)
			order = append(order, n)
			b.WriteByte('?')
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	if !numbered {
		return query, nil
	}
	return b.String(), order
}

// poolQuerier runs cached statements on a pool.
type poolQuerier struct{ c *stmtCache }

func (p poolQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, s.args(args)...)
}

func (p poolQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, s.args(args)...)
}

func (p poolQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := p.c.get(ctx, query)
	if err != nil {
		// Let the pool report the error through the row.
		return p.c.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, s.args(args)...)
}

// connQuerier runs statements prepared on the writer's one connection.
// Only the writer goroutine uses it (transactions run there), so its map
// needs no lock; the writer issues BEGIN, SAVEPOINT and COMMIT through it
// too.
type connQuerier struct {
	conn  *sql.Conn
	stmts map[string]*prepared
}

func (c connQuerier) stmt(ctx context.Context, query string) (*prepared, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	s, err := prepare(ctx, c.conn.PrepareContext, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = s
	return s, nil
}

func (c connQuerier) close() {
	for _, s := range c.stmts {
		s.Close()
	}
}

func (c connQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, s.args(args)...)
}

func (c connQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, s.args(args)...)
}

func (c connQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return c.conn.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, s.args(args)...)
}
