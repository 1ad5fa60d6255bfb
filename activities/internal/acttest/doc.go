// Package acttest holds the test helpers the activities packages share:
// fakes of the ports and assertions on the errors activities return.
package acttest
