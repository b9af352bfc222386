package storage

// PaymentQueries reads and writes card sessions, cards and payment intents.
type PaymentQueries interface{}
