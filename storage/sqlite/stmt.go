package sqlite

import (
	"context"
	"database/sql"
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
	m  sync.Map // query -> *sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.m.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (c *stmtCache) close() {
	c.m.Range(func(_, s any) bool {
		s.(*sql.Stmt).Close()
		return true
	})
}

// poolQuerier runs cached statements on a pool.
type poolQuerier struct{ c *stmtCache }

func (p poolQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (p poolQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (p poolQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := p.c.get(ctx, query)
	if err != nil {
		// Let the pool report the error through the row.
		return p.c.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// connQuerier runs statements prepared on the writer's one connection.
// Only the writer goroutine uses it (transactions run there), so its map
// needs no lock; the writer issues BEGIN, SAVEPOINT and COMMIT through it
// too.
type connQuerier struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

func (c connQuerier) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	s, err := c.conn.PrepareContext(ctx, query)
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
	return s.ExecContext(ctx, args...)
}

func (c connQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (c connQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return c.conn.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}
