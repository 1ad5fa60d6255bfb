// Package core is what every activities family shares about the fleet it
// acts on: the ports (ports.go) through which activities reach Flink,
// storage, Kubernetes and the people on call, and the settings that locate
// cleanup and drill state; the inventory and a run's scope over it
// (inventory.go, scope.go); and how a step reports: the error types and
// their classification (errors.go), heartbeats (heartbeat.go) and the
// clock (clock.go).
//
// A family package (windows, governance, drills, ...) imports core and the
// domain packages under internal/, never another family: what two families
// both need lives here.
package core
