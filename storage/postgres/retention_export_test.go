package postgres

// The statements of a retention pass, for the plan test.
const (
	EventPurge       = eventPurge
	CardSessionPurge = cardSessionPurge
)
