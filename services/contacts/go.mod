module github.com/opencrm/crm/services/contacts

go 1.26.8

require github.com/opencrm/crm/pkg v0.0.0

replace github.com/opencrm/crm/pkg => ../../pkg
