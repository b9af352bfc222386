package core

import (
	"fmt"
	"reflect"
	"strings"
)

// CheckSQL reports what is wrong with s after Init: a query of SQL that
// has no Params (so Init did not compile it), or a named parameter left
// in a text. Adapters' tests run it on their SQL; Init itself checks the
// names of each query against its Params.
func CheckSQL(s *SQL) error {
	if !s.compiled {
		return fmt.Errorf("SQL: not compiled (Init)")
	}
	listed := map[*string]bool{}
	for _, q := range s.named() {
		for _, t := range q.texts {
			listed[t] = true
		}
	}
	var errs []string
	check := func(name string, p *string) {
		if !listed[p] {
			errs = append(errs, name+" is not among the queries of SQL.named")
		}
		if namedLeft(*p) {
			errs = append(errs, name+" has a named parameter left")
		}
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() || f.Name == "IntentSelect" {
			continue // IntentSelect is a part of the others
		}
		switch fv.Kind() {
		case reflect.String:
			check(f.Name, fv.Addr().Interface().(*string))
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.String {
				for j := range fv.Len() {
					check(fmt.Sprintf("%s[%d]", f.Name, j), fv.Index(j).Addr().Interface().(*string))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("SQL: %s", strings.Join(errs, "; "))
	}
	return nil
}

// namedLeft reports whether text has an @name outside its string
// literals.
func namedLeft(text string) bool {
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '\'':
			end := strings.IndexByte(text[i+1:], '\'')
			if end < 0 {
				return false
			}
			i += end + 1
		case text[i] == '@' && i+1 < len(text) && isNameStart(text[i+1]):
			return true
		}
	}
	return false
}
