package webhooksapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "webhooks"

// Resource is the integration-token scope family of subscriptions, their
// deliveries and the events feed: an integration sets up its own webhooks
// with it, while a person needs the admin role.
const Resource = "webhooks"

var (
	webhookQuery  = []route.Param{route.Page, route.PerPage}
	deliveryQuery = []route.Param{route.Page, route.PerPage,
		route.Q("status", "string", "Only deliveries in this state.", "pending", "delivered", "failed")}
	eventQuery = []route.Param{
		route.Q("after", "string", "Cursor: the id of the last event seen (evt_...); events after it, oldest first. Without it the feed starts at the oldest event kept (30 days)."),
		route.Q("type", "string", "Only these event types, comma-separated (see the webhooks section)."),
		route.Q("limit", "integer", "Events per page, default 100, at most 1000."),
	}
)

// The public routes of webhooks: subscriptions, their delivery log, and
// the events feed.
var (
	ListWebhooks = route.Route{Method: http.MethodGet, Path: "/webhooks", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "List webhook subscriptions", Query: webhookQuery, Response: envelope.Page[Webhook]{}}
	CreateWebhook = route.Route{Method: http.MethodPost, Path: "/webhooks", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Create a webhook subscription", Request: WebhookInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Webhook]{}, Message: "Webhook created", Problems: []int{http.StatusConflict}}
	GetWebhook = route.Route{Method: http.MethodGet, Path: "/webhooks/{id}", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Get a webhook subscription", Response: envelope.Record[Webhook]{}}
	UpdateWebhook = route.Route{Method: http.MethodPut, Path: "/webhooks/{id}", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Update a webhook subscription", Request: WebhookInput{},
		Response: envelope.Record[Webhook]{}, Message: "Webhook updated", Problems: []int{http.StatusConflict}}
	DeleteWebhook = route.Route{Method: http.MethodDelete, Path: "/webhooks/{id}", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Delete a webhook subscription", Response: envelope.Deleted{}, Message: "Webhook deleted"}
	RotateWebhookSecret = route.Route{Method: http.MethodPost, Path: "/webhooks/{id}/rotate-secret", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Rotate the signing secret; the new one is returned once",
		Response: envelope.Record[Webhook]{}, Message: "Signing secret rotated"}
	TestWebhook = route.Route{Method: http.MethodPost, Path: "/webhooks/{id}/test", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Send a ping event to the subscription now and return its delivery",
		Response: envelope.Record[Delivery]{}}
	ListDeliveries = route.Route{Method: http.MethodGet, Path: "/webhooks/{id}/deliveries", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "The subscription's delivery log, newest first", Query: deliveryQuery, Response: envelope.Page[Delivery]{}}
	RetryDelivery = route.Route{Method: http.MethodPost, Path: "/webhooks/{id}/deliveries/{deliveryId}/retry", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "Send a delivery again now", Response: envelope.Record[Delivery]{}, Message: "Delivery queued for retry"}
	ListEvents = route.Route{Method: http.MethodGet, Path: "/events", Service: Service, Auth: route.Admin, Resource: Resource,
		Tag: "Webhooks", Summary: "The events feed: every change, oldest first, with a cursor (30 days kept)",
		Query: eventQuery, Response: EventFeed{}}
)

// Routes are the public routes webhooks serves, in the document's order.
var Routes = []route.Route{
	ListWebhooks, CreateWebhook, GetWebhook, UpdateWebhook, DeleteWebhook,
	RotateWebhookSecret, TestWebhook, ListDeliveries, RetryDelivery, ListEvents,
}
