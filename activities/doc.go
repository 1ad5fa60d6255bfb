// Package activities is the home of flinkmaint's activities, one package
// per workflow family, each with one small Activities type holding only
// the ports and settings it uses:
//
//   - windows: maintenance windows and the savepoints they and their
//     schedules take
//   - governance: cleanup plans, their execution, the trash and the
//     savepoint catalog
//   - drills: restore drills
//   - upgrades: single-job upgrades and their rehearsals
//   - capacity: quotas and storage usage
//   - oncall: notifications, freezes and the tenant lock
//   - doctor: ping, the worker doctor and the inventory view
//
// What two families share lives in core: the ports, error types and their
// classification, the scope of a run, and the small types (core.Jobs,
// core.Catalog, core.Lineage, ...) that act on the fleet. A family imports
// core and the domain packages under internal/, never another family.
// internal/app builds every family from one set of ports (app.Ports) and
// registers them; an activity is named after its method, so method names
// are unique across families (registered_test.go in internal/app).
package activities
