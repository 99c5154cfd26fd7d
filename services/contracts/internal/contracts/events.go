package contracts

// Event types published on the contracts stream (crm:events:contracts).
// Every one but EventDeleted carries the contract as contractsapi.GetContract
// answers it after the change; EventDeleted carries only the id. Which
// write records which, in what order, is the store's to decide in the
// write's own transaction (see docs/decisions.md, "Contract events").
const (
	EventCreated = "contract.created"
	EventUpdated = "contract.updated"
	EventDeleted = "contract.deleted"
	// EventStatusChanged follows every status transition, whatever made it:
	// a PUT, the signed copy's upload or removal, the expiry job.
	EventStatusChanged = "contract.status_changed"
	// EventExecuted follows the upload of a signed copy: the contract is
	// executed with its executed_file set.
	EventExecuted = "contract.executed"
)
