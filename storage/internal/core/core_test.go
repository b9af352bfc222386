package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// testDialect writes every value as it is, with numbered placeholders.
type testDialect struct{}

func (testDialect) Name() string                                 { return "test" }
func (testDialect) Placeholder(n int) string                     { return "?" + strconv.Itoa(n) }
func (testDialect) Time(t time.Time) any                         { return t }
func (testDialect) TimeDst(t *time.Time) any                     { return t }
func (testDialect) Metadata(m map[string]string) (any, error)    { return m, nil }
func (testDialect) MetadataDst(m *map[string]string) any         { return m }
func (testDialect) Strings(s []string) (any, error)              { return s, nil }
func (testDialect) StringsDst(s *[]string) any                   { return s }
func (testDialect) Voided(v []keelpay.VoidedCharge) (any, error) { return v, nil }
func (testDialect) VoidedDst(v *[]keelpay.VoidedCharge) any      { return v }
func (testDialect) LastError(e *keelpay.LastError) (any, error)  { return e, nil }
func (testDialect) LastErrorDst(e **keelpay.LastError) any       { return e }
func (testDialect) MapErr(err error) error                       { return MapErr(err, testKind) }

var errNoRows = errors.New("no rows")

func testKind(err error) ErrorKind {
	if errors.Is(err, errNoRows) {
		return ErrNoRows
	}
	return ErrOther
}

func TestStandardFillsOnlyWhatIsUnset(t *testing.T) {
	s := adapterSQL()
	s.CardGet = "SELECT mine FROM cards WHERE store_id = @store_id AND id = @id"
	if err := s.Standard(testDialect{}); err != nil {
		t.Fatal(err)
	}
	if s.CardGet != "SELECT mine FROM cards WHERE store_id = ?1 AND id = ?2" {
		t.Errorf("CardGet overwritten: %s", s.CardGet)
	}
	if !strings.HasPrefix(s.IntentGet, "SELECT "+IntentColumns) || s.intentUpdate == "" {
		t.Errorf("IntentGet: %s", s.IntentGet)
	}
	if want := "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"; !strings.Contains(s.AttemptCheckInsert, want) {
		t.Errorf("AttemptCheckInsert: %s", s.AttemptCheckInsert)
	}
	if err := CheckSQL(s); err != nil {
		t.Error(err)
	}
}

func TestMapErr(t *testing.T) {
	if MapErr(nil, testKind) != nil {
		t.Error("nil mapped")
	}
	if got := MapErr(fmt.Errorf("scan: %w", errNoRows), testKind); got != storage.ErrNotFound {
		t.Errorf("no rows: %v", got)
	}
	other := errors.New("other")
	if got := MapErr(other, testKind); got != other {
		t.Errorf("other: %v", got)
	}
	transient := MapErr(other, func(error) ErrorKind { return ErrTransient })
	if !errors.Is(transient, storage.ErrConflict) || !IsTransient(transient) || !errors.Is(transient, other) {
		t.Errorf("transient: %v", transient)
	}
	// Mapping twice changes nothing.
	if again := MapErr(transient, func(error) ErrorKind { return ErrTransient }); again != transient {
		t.Errorf("mapped twice: %v", again)
	}
	dup := MapErr(other, func(error) ErrorKind { return ErrUnique })
	if again := MapErr(dup, func(error) ErrorKind { return ErrUnique }); again != dup || !errors.Is(dup, storage.ErrDuplicate) {
		t.Errorf("duplicate: %v, %v", dup, again)
	}
}

func TestMigrations(t *testing.T) {
	fsys := fstest.MapFS{
		"migration/010_ten.sql": {Data: []byte("ten")},
		"migration/002_two.sql": {Data: []byte("two")},
		"migration/README":      {Data: []byte("not a migration")},
	}
	got, err := Migrations(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Version != 2 || got[0].Body != "two" || got[1].Version != 10 || got[1].Name != "migration/010_ten.sql" {
		t.Errorf("migrations: %+v", got)
	}
	if _, err := Migrations(fstest.MapFS{"migration/x_bad.sql": {}}); err == nil {
		t.Error("a file without a number is a migration")
	}
}

// The update of an intent sets every column but its identity, creation,
// client secret and customer (set by the create, emptied only by an
// erasure), and finds the row by id, store and version.
func TestIntentUpdate(t *testing.T) {
	s := adapterSQL()
	if err := s.Standard(testDialect{}); err != nil {
		t.Fatal(err)
	}
	n := len(updateParams(&intentTable))
	if want := len(intentTable.cols) - 8 + 3; n != want {
		t.Fatalf("%d parameters, want %d", n, want)
	}
	set, where, ok := strings.Cut(s.intentUpdate, "WHERE")
	if !ok || strings.TrimSpace(where) != "id = ?1 AND store_id = ?2 AND version = ?"+strconv.Itoa(n) {
		t.Fatalf("update: %s", s.intentUpdate)
	}
	set = strings.TrimPrefix(strings.TrimSpace(set), "UPDATE payment_intents SET ")
	for _, a := range strings.Split(set, ",") {
		switch col, _, _ := strings.Cut(strings.TrimSpace(a), " = "); col {
		case "id", "store_id", "created_at", "client_secret", "customer_id", "customer_name", "customer_email", "customer_phone":
			t.Errorf("sets %s", col)
		}
	}
}
