package httpapi

// eventRoutes are the routes of webhook tests and events.
func (a *api) eventRoutes() []route { return nil }
