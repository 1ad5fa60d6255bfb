package core

import (
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// TenantNames are the names of tenants, for SucceededFor.
func TenantNames(tenants []inventory.Tenant) []string {
	names := make([]string, 0, len(tenants))
	for _, t := range tenants {
		names = append(names, t.Name)
	}
	return names
}
