package httpapi

// browserRoutes are the browser script and the hosted card field.
func (a *api) browserRoutes() []route { return nil }
