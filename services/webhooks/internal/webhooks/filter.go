package webhooks

import "github.com/opencrm/crm/pkg/list"

// Filter is a page of subscriptions: the common list query and the owner
// they are limited to (nil for an admin person, who sees every one).
type Filter struct {
	list.Query
	Owner *int64
}

// DeliveryFilter is a page of one subscription's delivery log, of one
// status when Status is set (one of Statuses).
type DeliveryFilter struct {
	list.Query
	Status string
}
