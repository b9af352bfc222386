package traced_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/internal/tracing/traced"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// TestEveryQueryHasASpan: every method of storage.Executor is declared in
// executor.go, and every other method of storage.Storage (WithTx, Commit,
// ...) in storage.go, so none is served untraced by an embedded value.
func TestEveryQueryHasASpan(t *testing.T) {
	declaredIn := func(file string) map[string]bool {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		declared := map[string]bool{}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				declared[fn.Name.Name] = true
			}
		}
		return declared
	}
	declared := declaredIn("executor.go")
	et := reflect.TypeFor[storage.Executor]()
	for i := range et.NumMethod() {
		require.True(t, declared[et.Method(i).Name], "storage.Executor.%s has no span in executor.go", et.Method(i).Name)
	}
	declared = declaredIn("storage.go")
	st := reflect.TypeFor[storage.Storage]()
	for i := range st.NumMethod() {
		name := st.Method(i).Name
		if _, inExecutor := et.MethodByName(name); !inExecutor {
			require.True(t, declared[name], "storage.Storage.%s is not declared in storage.go", name)
		}
	}
}

type watching struct {
	storage.Storage
}

func (watching) StoreEpoch() (uint64, bool) { return 7, true }

func TestWrappersOnlyWithATracer(t *testing.T) {
	require.Nil(t, tracing.Tracer(nil))
	require.Nil(t, tracing.Tracer(noop.NewTracerProvider()))
	tp := sdktrace.NewTracerProvider()
	tr := tracing.Tracer(tp)
	require.NotNil(t, tr)

	var db storage.Storage = watching{}
	require.Equal(t, db, traced.Storage(db, nil))
	wrapped := traced.Storage(db, tr)
	require.NotEqual(t, db, wrapped)
	w, ok := wrapped.(storage.StoreWatcher)
	require.True(t, ok, "the wrapper hides StoreWatcher")
	epoch, ok := w.StoreEpoch()
	require.Equal(t, uint64(7), epoch)
	require.True(t, ok)
	type plain struct{ storage.Storage }
	_, ok = traced.Storage(plain{}, tr).(storage.StoreWatcher)
	require.False(t, ok, "the wrapper claims StoreWatcher for a storage without it")

	var p provider.Provider
	require.Nil(t, traced.Provider(p, nil))

	// A provider's browser element stays reachable through the wrapper,
	// and a provider without one does not gain it.
	_, ok = traced.Provider(capturing{}, tr).(provider.BrowserCapture)
	require.True(t, ok, "the wrapper hides BrowserCapture")
	el, err := traced.Provider(capturing{}, tr).(provider.BrowserCapture).BrowserElement(context.Background(), "m")
	require.NoError(t, err)
	require.Equal(t, provider.ElementSandbox, el.Kind)
	_, ok = traced.Provider(plainProvider{}, tr).(provider.BrowserCapture)
	require.False(t, ok, "the wrapper claims BrowserCapture for a provider without it")

	// So does a provider's card detacher, alone or with an element.
	for _, p := range []provider.Provider{detaching{}, capturingDetaching{}} {
		d, ok := traced.Provider(p, tr).(provider.CardDetacher)
		require.True(t, ok, "the wrapper hides CardDetacher of %T", p)
		require.ErrorIs(t, d.DetachCard(context.Background(), "m", "tok"), errDetached)
	}
	_, ok = traced.Provider(capturingDetaching{}, tr).(provider.BrowserCapture)
	require.True(t, ok, "the wrapper hides BrowserCapture of a provider that detaches too")
	for _, p := range []provider.Provider{plainProvider{}, capturing{}} {
		_, ok = traced.Provider(p, tr).(provider.CardDetacher)
		require.False(t, ok, "the wrapper claims CardDetacher for %T", p)
	}
}

var errDetached = errors.New("detached")

type detaching struct{ provider.Provider }

func (detaching) DetachCard(context.Context, string, string) error { return errDetached }

type capturingDetaching struct{ capturing }

func (capturingDetaching) DetachCard(context.Context, string, string) error { return errDetached }

type plainProvider struct{ provider.Provider }

type capturing struct{ provider.Provider }

func (capturing) BrowserElement(context.Context, string) (*provider.Element, error) {
	return &provider.Element{Kind: provider.ElementSandbox}, nil
}
