package events_test

// mustNew returns what a constructor built, and panics with its error: for
// test set-ups whose configuration is known to be valid.
func mustNew[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
