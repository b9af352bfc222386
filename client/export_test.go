package client

// SetStrict makes c refuse answers with fields its types do not have, so
// that the tests prove the types decode every field the server sends.
func SetStrict(c *Client) { c.strict = true }

// ParseRetryAfter is parseRetryAfter for the tests.
var ParseRetryAfter = parseRetryAfter
