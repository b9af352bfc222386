// Package httpprovider carries the [provider.Provider] interface over HTTP,
// so that several keelpay processes can share one payment provider as they
// would share a real one. [Client] is a Provider that calls a remote one;
// [NewHandler] serves any Provider to such clients. The reference server
// uses the pair for its sandbox: one process owns the sandbox and serves it
// ([github.com/keelpay/keelpay/provider/sandbox.Sandbox.APIHandler]), the
// others reach it with a Client, and a 3D Secure challenge, an unknown
// outcome or a refund started by any of them can be answered by any other.
//
//	p, err := httpprovider.New(httpprovider.Config{BaseURL: "http://127.0.0.1:8080"})
//	// p is a provider.Provider: hand it to payments, refunds and stores.
//
// # The protocol
//
// Every method is one POST of a JSON object to BaseURL + [PathPrefix] +
// its name, answered 200 with a JSON object:
//
//	check_application  {client_id, client_secret}
//	                   -> {merchant_id, currency}
//	save_card          {merchant_id, payment_method, number, exp_month, exp_year, cvc, name}
//	                   -> {token, brand, last4, exp_month, exp_year}
//	charge             {merchant_id, attempt_id, card_token | new_card: {payment_method, number, exp_month, exp_year, cvc, name},
//	                    amount, currency, billing: {country, state, postal_code}}
//	                   -> charge result
//	lookup_charge      {merchant_id, attempt_id} -> charge result
//	void               {merchant_id, attempt_id} -> {}
//	refund             {merchant_id, attempt_id, charge_attempt_id, order_id, amount, currency}
//	                   -> refund result
//	lookup_refund      {merchant_id, attempt_id} -> refund result
//	browser_element    {merchant_id} -> {element: {kind, script_url, publishable_key,
//	                    connect_sources, frame_sources, script_sources} | null}
//
// A charge result is {status, authorization_code, order_id, amount,
// currency, action_url, failure: {code, decline_code, message}, card:
// {token, brand, last4, exp_month, exp_year}, voided}; a refund result is
// {status, failure}. Field values are those of the provider package's
// types. Requests with an attempt id also carry it as the Idempotency-Key
// header: the provider does each attempt once, so net/http may send such a
// request again when a kept-alive connection turns out to be closed.
//
// A call that produced no result is answered with a non-200 status and
// {"error": {kind, message, retry_after_ms, missing_roles}}. kind is a
// [provider.ErrorKind], "unknown_attempt" for [provider.ErrUnknownAttempt],
// or "internal_error" when the provider failed with another error; the
// client turns each back into what the provider returned. Card numbers and
// CVCs travel only in request bodies, and neither side logs bodies.
//
// # When there is no answer
//
// A client that cannot tell what the provider did must say so, as a real
// provider's client must:
//
//   - The connection could not be made, or the answer is a 4xx without a
//     protocol error (no such endpoint, a proxy's 408 or 429): the request
//     was not carried out. Every method returns [provider.KindUnavailable].
//   - A time-out, a connection lost after the request went out, any other
//     answer that is not the protocol's, and "internal_error": the call may
//     have happened. Charge, Refund and Void return
//     [provider.KindOutcomeUnknown], so the service keeps the attempt open
//     and looks it up later with the same attempt id; CheckApplication,
//     SaveCard and the lookups, which move no money, return
//     [provider.KindUnavailable].
//
// The server side has no authentication: serve it only where the processes
// that may charge cards can reach it (the reference server does so in
// sandbox mode only).
package httpprovider
