// Package httptool builds host tools that call HTTP services from a declaration file
// (JSON or YAML): each tool names its URL template, HTTP method, body encoding, headers
// (secrets read from the environment, in headers or the URL), schemas, timeout, and optionally how to
// reconcile a mutation whose outcome is unknown.
//
// A declaration file (tools.yaml):
//
//	tools:
//	  - namespace: Stripe
//	    method: charge
//	    description: Create a charge.
//	    url: https://api.stripe.example/v1/charges/{customer}?note={note}
//	    http_method: POST          # default POST, or GET when read_only
//	    body: form                 # json (default for POST, PUT, PATCH), form, query, raw or none
//	    headers:
//	      Authorization: Bearer ${STRIPE_KEY}
//	    input_schema: {type: object, properties: {customer: {type: string}, amount: {type: integer}, note: {type: string}}}
//	    output_schema: {type: object}
//	    secret_fields: [card]      # input fields redacted wherever stored or printed
//	    timeout: 10s               # default 30s
//	    reconcile:
//	      method: GET
//	      url: https://api.stripe.example/v1/charges?idempotency_key={key}
//	  - namespace: Stripe
//	    method: customer
//	    read_only: true
//	    url: https://api.stripe.example/v1/customers/{id}
//
// Where the input's fields go. In a URL, {field} is the input's top-level field
// (path-escaped before the '?', query-escaped after it; a query parameter whose field is
// absent is dropped) and {key} is the mutation's idempotency key. A header value may
// take {field} and {key} too (Stripe-Account: "{account}"), sent as they are; a value
// holding a control character is refused. ${NAME} (the environment) and {field} do not
// mix in one header value.
//
// Secrets in a URL. ${NAME} may also stand in the path or the query of url and of the
// reconcile url (a webhook whose token is its path: https://hooks.slack.com/services/
// T0123/B0456/${SLACK_HOOK_TOKEN}). The value is read when the file is loaded, must be
// 8 characters or more, and is percent-encoded but for A-Z a-z 0-9 - . _ ~, so that
// whatever it holds (/ ? # @ & = %) it stays one path segment or one query value; a
// path value that is, or holds, a dot segment is refused. It is refused in the scheme,
// user info, host or port (it would choose the server, and go out in DNS look-ups and
// TLS server names) and in the fragment (never sent). The value is a secret like a
// header's: hidden in the tool's own messages and registered in the tool's Secrets. The body carries the top-level fields the URL and headers do not
// take; repeat_in_body lists those to send in the body too. The body:
//   - json: the fields as a JSON object (an input that is not an object is sent as it
//     is);
//   - form: application/x-www-form-urlencoded, nested the way Stripe and Rails read it
//     (metadata[order]=o1, items[0][price]=p1; booleans as true/false; null, "", {}
//     and [] as an empty value);
//   - query: no body; the fields form-encoded as form does, into the query string (for
//     GET lists such as Stripe's created[gte]=…&expand[0]=…; the url then has no '?');
//   - raw: the string field named by body_field (default "body") as it is, with the
//     declared content_type; every other field must be in the URL;
//   - none: no body.
//
// content_type overrides the body's content type (application/vnd.api+json, say). Keys
// are sorted, so one input is always one body, byte for byte.
//
// A mutation carries the key as the Idempotency-Key header, and is sent on a fresh
// connection so that net/http never replays it.
//
// Answers: 2xx is the result (JSON, or the body as a JSON string); 401 is an auth
// error, 403 a permission error, 409 to a mutation a network error (a request with its
// key is still under way), other 4xx a logic error (the service refused: the mutation
// definitely did not happen); 5xx, 408, 429, timeouts and connection errors are network
// errors (the outcome of a mutation is unknown and is reconciled). A JSON error body
// gives the error its code and message: Stripe's {"error": {"type", "code", "message",
// "param"}}, RFC 9457 problem details ({"type", "title", "detail"}), or a plain
// {"error": "..."} or {"message": "..."}. A 429 or 503 with Retry-After makes a read
// wait and ask again (twice at most, and only when the wait fits the timeout); to a
// mutation it delays the first reconcile attempt (hostfuncs.RetryAfterError), and to a
// reconcile request the next one.
//
// Reconcile strategies. A lookup (reconcile: {method, url}) asks the service about the
// key: 2xx applied with its body as the result, 404 failed, anything else try again
// later. A 404 is trusted only once the first request cannot still be under way: until
// the mutation's record is older than the tool's timeout plus reconcile.settle (by
// default the timeout again), it means "try again then", because a service that has
// not yet committed a slow request has no record of it either. Replay (reconcile: {strategy: replay}) re-sends the mutation itself, same
// method, URL, body and key, to a service that answers a key it has seen with the
// outcome it stored (Stripe, the IETF Idempotency-Key draft): 2xx applied with that
// result; 409, 401, 403, 408, 429 and 5xx try again later; 422, or a 4xx whose error
// type is idempotency_error, means the key is held for other parameters and a person
// must decide; any other 4xx is the stored refusal, so the mutation failed. Replay
// re-sends the stored params, so it cannot be combined with secret_fields.
package httptool
