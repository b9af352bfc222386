package httpapi

// paymentRoutes are the routes of card sessions, cards and payment intents
// (docs/api.md, "Endpoints"). Without a payments service they do not
// exist.
func (a *api) paymentRoutes() []route {
	if a.cfg.Payments == nil {
		return nil
	}
	return []route{
		{"POST", "/v1/card_sessions", authSecret, keyInTx, a.createCardSession},
		{"GET", "/v1/card_sessions/{id}", authSecret, noKey, a.getCardSession},
		{"POST", "/v1/card_sessions/{id}/cards", authPublishable, noKey, a.captureCard},
		{"GET", "/v1/cards", authSecret, noKey, a.listCards},
		{"GET", "/v1/cards/{id}", authSecret, noKey, a.getCard},
		{"DELETE", "/v1/cards/{id}", authSecret, noKey, a.deleteCard},
		{"POST", "/v1/customers/{id}/erase", authSecret, keyed, a.eraseCustomer},
		{"POST", "/v1/payment_intents", authSecret, keyInTx, a.createIntent},
		{"GET", "/v1/payment_intents", authSecret, noKey, a.listIntents},
		{"GET", "/v1/payment_intents/{id}", authAnyKey, noKey, a.getIntent},
		{"POST", "/v1/payment_intents/{id}/confirm", authAnyKey, keyInTx, a.confirmIntent},
		{"POST", "/v1/payment_intents/{id}/cancel", authSecret, keyed, a.cancelIntent},
	}
}
