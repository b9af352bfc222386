package httpapi

// paymentRoutes are the routes of card sessions, cards and payment intents
// (docs/api.md, "Endpoints"). Without a payments service they do not
// exist.
func (a *api) paymentRoutes() []route {
	if a.cfg.Payments == nil {
		return nil
	}
	return []route{
		{"POST", "/v1/card_sessions", authSecret, a.createCardSession},
		{"GET", "/v1/card_sessions/{id}", authSecret, a.getCardSession},
		{"POST", "/v1/card_sessions/{id}/cards", authPublishable, a.captureCard},
		{"GET", "/v1/cards/{id}", authSecret, a.getCard},
		{"POST", "/v1/payment_intents", authSecret, a.createIntent},
		{"GET", "/v1/payment_intents", authSecret, a.listIntents},
		{"GET", "/v1/payment_intents/{id}", authAnyKey, a.getIntent},
		{"POST", "/v1/payment_intents/{id}/confirm", authAnyKey, a.confirmIntent},
		{"POST", "/v1/payment_intents/{id}/cancel", authSecret, a.cancelIntent},
	}
}
