// Package payments runs card sessions, cards and payment intents.
package payments

// Service runs card sessions, cards and payment intents.
type Service struct{}
