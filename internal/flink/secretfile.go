package flink

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// secretFile is a credential kept in a file, such as a mounted Kubernetes
// Secret. It is read again when the file's size or modification time
// changes (a Secret update swaps the file), so a rotated token or password
// is used from the next request on; a stat per request is all it costs
// otherwise.
type secretFile struct {
	path string

	mu      sync.Mutex
	size    int64
	modTime time.Time
	value   string
}

// get returns the file's content without surrounding white space.
func (s *secretFile) get() (string, error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return "", fmt.Errorf("credential file %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.value != "" && fi.Size() == s.size && fi.ModTime().Equal(s.modTime) {
		return s.value, nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return "", fmt.Errorf("credential file %s: %w", s.path, err)
	}
	v := strings.TrimSpace(string(b))
	switch {
	case v == "":
		return "", fmt.Errorf("credential file %s is empty", s.path)
	case strings.ContainsAny(v, "\r\n"):
		return "", fmt.Errorf("credential file %s holds more than one line", s.path)
	}
	s.value, s.size, s.modTime = v, fi.Size(), fi.ModTime()
	return v, nil
}
