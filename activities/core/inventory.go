package core

import (
	"context"
	"errors"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Discover reads the inventory: an invalid one is final, an unreachable
// source is retried.
func Discover(ctx context.Context, src InventorySource) (inventory.Inventory, error) {
	inv, err := src.Discover(ctx)
	if errors.Is(err, inventory.ErrInvalid) {
		return inv, NonRetryable(ErrTypeInventory, "inventory is invalid: %v", err)
	}
	if err != nil {
		return inv, Classify("discover inventory", err)
	}
	return inv, nil
}
