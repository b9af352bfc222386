package keelpay

// Version is keelpay's version, sent in the User-Agent of deliveries.
const Version = "0.1.0"
