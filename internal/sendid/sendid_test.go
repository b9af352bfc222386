package sendid

import (
	"strings"
	"testing"
)

func TestForIsStableAndDistinct(t *testing.T) {
	a := For("att_", "pi_abc", 3)
	if a != For("att_", "pi_abc", 3) {
		t.Fatal("the same record and version gave two ids")
	}
	if !strings.HasPrefix(a, "att_") || len(a) != len("att_")+24 {
		t.Fatalf("id %q: want att_ and 24 characters", a)
	}
	for _, other := range []string{
		For("att_", "pi_abc", 4),
		For("att_", "pi_abd", 3),
		For("rfatt_", "pi_abc", 3),
		// Parts are length-prefixed: moving a character between them
		// changes the id.
		For("att_p", "i_abc", 3),
	} {
		if other == a {
			t.Fatalf("%q collides with %q", other, a)
		}
	}
	for _, c := range a[len("att_"):] {
		if !strings.ContainsRune(base62, c) {
			t.Fatalf("id %q has %q, not base62", a, c)
		}
	}
}

func TestForSpreadsOverTheAlphabet(t *testing.T) {
	seen := map[byte]int{}
	ids := map[string]bool{}
	for v := range int64(2000) {
		id := For("att_", "pi_x", v)
		if ids[id] {
			t.Fatalf("version %d repeats id %s", v, id)
		}
		ids[id] = true
		for i := len("att_"); i < len(id); i++ {
			seen[id[i]]++
		}
	}
	if len(seen) != 62 {
		t.Fatalf("%d of 62 characters used in 48,000", len(seen))
	}
}
