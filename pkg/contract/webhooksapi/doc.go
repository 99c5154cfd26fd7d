// Package webhooksapi is the webhooks context's public contract: the
// subscription, delivery and event wire types the OpenAPI document is
// generated from, the list of event types an integration can subscribe to,
// and the Standard Webhooks signature (Sign, Verify) that the service puts
// on every delivery and a receiver checks. The service encodes and decodes
// these types themselves, with no copies to keep in step, so their
// timestamps are timestamp.Time (the platform's six fractional digits).
// Nothing else calls the webhooks context, so it has no internal API.
// Changes here are additive.
package webhooksapi
