package kube

import (
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func ref(kind, ns, name string) inventory.ObjectRef {
	return inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: kind, Namespace: ns, Name: name}
}
