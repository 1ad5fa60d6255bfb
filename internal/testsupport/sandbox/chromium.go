package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// EnvChromium overrides the path of the Chromium binary that
// scripts/chromium.sh installs from Debian's packages.
const EnvChromium = "FLINKMAINT_CHROMIUM"

// DefaultChromium is where Debian's chromium package puts the browser.
const DefaultChromium = "/usr/bin/chromium"

// Browser is a headless Chromium driven through the DevTools protocol over
// a pipe (--remote-debugging-pipe): one page, commands sent as JSON, no
// library and no network port. Enough to load a page, read what it shows,
// click and take a screenshot, as a person would.
type Browser struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	session string

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan cdpReply
	closed  chan struct{}
	readErr error
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// StartChromium starts headless Chromium with a page of width x height
// pixels and closes it when the test ends. A missing Chromium fails the
// test: scripts/chromium.sh installs it (make test runs it).
func StartChromium(t testing.TB, width, height int) *Browser {
	t.Helper()
	bin := os.Getenv(EnvChromium)
	if bin == "" {
		bin = DefaultChromium
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Chromium not found at %s (%v): run scripts/chromium.sh (make test does) or set %s", bin, err, EnvChromium)
	}
	toBrowser, fromTest, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowser, toTest, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	logPath := filepath.Join(profile, "chromium.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--user-data-dir="+profile,
		"--remote-debugging-pipe", "about:blank")
	// The protocol's pipe: Chromium reads commands from fd 3, answers on fd 4.
	cmd.ExtraFiles = []*os.File{toBrowser, toTest}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	_ = toBrowser.Close()
	_ = toTest.Close()
	b := &Browser{cmd: cmd, in: fromTest, waiting: map[int64]chan cdpReply{}, closed: make(chan struct{})}
	go b.read(fromBrowser)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", nil)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = fromTest.Close()
		_ = logFile.Close()
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.callInto(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatalf("Chromium (%s, log %s): create a page: %v", bin, logPath, err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.callInto(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatalf("Chromium: attach to the page: %v", err)
	}
	b.session = attached.SessionID
	if err := b.callInto(ctx, b.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatalf("Chromium: size the page: %v", err)
	}
	return b
}

// read dispatches the browser's answers to their callers; events are
// ignored.
func (b *Browser) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var msg []byte
		msg, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m struct {
			ID int64 `json:"id"`
			cdpReply
		}
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
	b.mu.Lock()
	b.readErr = err
	b.mu.Unlock()
	close(b.closed)
}

// call sends one protocol command (to the page when session is set) and
// waits for its answer.
func (b *Browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	msg["id"] = id
	b.waiting[id] = ch
	b.mu.Unlock()
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	_, err = b.in.Write(append(data, 0))
	b.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		return r.Result, nil
	case <-b.closed:
		b.mu.Lock()
		defer b.mu.Unlock()
		return nil, fmt.Errorf("%s: Chromium closed the pipe: %v", method, b.readErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (b *Browser) callInto(ctx context.Context, session, method string, params, out any) error {
	res, err := b.call(ctx, session, method, params)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(res, out)
}

// Navigate loads url in the page (it returns once the navigation started;
// wait for what the page should show with Eval).
func (b *Browser) Navigate(ctx context.Context, url string) error {
	var res struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.callInto(ctx, b.session, "Page.navigate", map[string]any{"url": url}, &res); err != nil {
		return err
	}
	if res.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, res.ErrorText)
	}
	return nil
}

// Eval runs a JavaScript expression in the page (awaiting a promise) and
// decodes its JSON value into out.
func (b *Browser) Eval(ctx context.Context, expression string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.callInto(ctx, b.session, "Runtime.evaluate",
		map[string]any{"expression": expression, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return fmt.Errorf("script failed: %s %s", e.Text, e.Exception.Description)
	}
	if out == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// Screenshot returns a PNG of the page as it is shown.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := b.callInto(ctx, b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if len(png) == 0 {
		return nil, errors.New("screenshot: empty image")
	}
	return png, nil
}
