package httpapi

// paymentRoutes are the routes of card sessions, cards and payment intents.
func (a *api) paymentRoutes() []route { return nil }
