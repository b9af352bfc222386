package postgres

// The statements of a retention pass, for the plan test.
const EventPurge = eventPurge

// CardSessionPurge is the purge of card sessions, compiled.
var CardSessionPurge = sqlText.CardSessionPurge
