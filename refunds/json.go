package refunds

import "github.com/keelpay/keelpay/internal/render"

// Object is the decoded wire form of a refund, as the API answers and an
// event's object carries it: the type an embedder decodes those bodies
// into. Nothing renders from it: keelpay renders a refund with one
// function, and a test holds this type to that rendering and to
// docs/openapi.json. A refund carries no personal data.
type Object = render.RefundObject
