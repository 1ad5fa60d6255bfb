package temporalconn

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

type jobEntry struct {
	Key           string `json:"key"`
	SavepointPath string `json:"savepointPath"`
}

func window(n int) []jobEntry {
	jobs := make([]jobEntry, n)
	for i := range jobs {
		jobs[i] = jobEntry{Key: "cluster-a/job-" + strings.Repeat("x", i%7), SavepointPath: "hdfs://nn:8020/user/app/team-a/savepoints/savepoint-0a1b2c-3d4e5f6a7b8c"}
	}
	return jobs
}

func TestDataConverterCompressesOnlyLargePayloads(t *testing.T) {
	dc := DataConverter()
	small, err := dc.ToPayload(window(3))
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(small.Metadata[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		t.Errorf("small payload encoding %q; want plain %s, readable without the codec", enc, converter.MetadataEncodingJSON)
	}
	big := window(5000)
	plain, err := converter.GetDefaultDataConverter().ToPayload(big)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dc.ToPayload(big)
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(p.Metadata[converter.MetadataEncoding]); enc != "binary/zlib" {
		t.Fatalf("large payload encoding %q; want binary/zlib", enc)
	}
	t.Logf("5000 entries: %d bytes as JSON, %d compressed", len(plain.Data), len(p.Data))
	if len(p.Data) >= CompressAbove {
		t.Errorf("compressed payload still %d bytes", len(p.Data))
	}
	var back []jobEntry
	if err := dc.FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(big) || back[4999] != big[4999] {
		t.Errorf("round trip lost data: %d entries", len(back))
	}
	// Payloads written without the codec still decode.
	var old []jobEntry
	if err := dc.FromPayload(plain, &old); err != nil || len(old) != len(big) {
		t.Errorf("plain payload: %d entries, %v", len(old), err)
	}
}

const (
	testToken  = "0123456789abcdef0123456789abcdef"
	testOrigin = "http://localhost:8233"
)

func codecServer(t *testing.T, opts CodecOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(CodecHandler(opts))
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to url with the headers given as name, value pairs and
// returns the status, the response headers and the body.
func post(t *testing.T, url string, body []byte, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(out)
}

func payloadsJSON(t *testing.T, ps ...*commonpb.Payload) []byte {
	t.Helper()
	body, err := json.Marshal(&commonpb.Payloads{Payloads: ps})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// zlibBomb is a binary/zlib payload whose data inflates to mib MiB of
// zeros (and then ends early: it is never read that far).
func zlibBomb(t *testing.T, mib int) *commonpb.Payload {
	t.Helper()
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for i := 0; i < 2; i++ {
		if _, err := w.Write(zeros); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	head := buf.Len()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// The second flushed block decodes to 1 MiB of zeros after any run of
	// zeros, so repeating it repeats them.
	block := bytes.Clone(buf.Bytes()[head:])
	data := bytes.Clone(buf.Bytes())
	for i := 2; i < mib; i++ {
		data = append(data, block...)
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/zlib")}, Data: data}
}

// zlibPayload is a binary/zlib payload as the data converter writes it,
// of a JSON payload of n bytes.
func zlibPayload(t *testing.T, n int) *commonpb.Payload {
	t.Helper()
	inner, err := proto.Marshal(&commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     bytes.Repeat([]byte(" "), n),
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	if _, err := w.Write(inner); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/zlib")}, Data: buf.Bytes()}
}

func TestCodecHandlerServesTheWebUI(t *testing.T) {
	srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})

	// A preflight carries no credentials; it is answered for the UI's origin.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
	req.Header.Set("Origin", testOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != testOrigin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	p, err := DataConverter().ToPayload(window(5000))
	if err != nil {
		t.Fatal(err)
	}
	code, h, body := post(t, srv.URL+"/codec/decode", payloadsJSON(t, p), "Origin", testOrigin, "Authorization", "Bearer "+testToken)
	var out struct {
		Payloads []struct {
			Metadata map[string][]byte `json:"metadata"`
			Data     []byte            `json:"data"`
		} `json:"payloads"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("decode: %d %s: %v", code, body, err)
	}
	if code != http.StatusOK || len(out.Payloads) != 1 || string(out.Payloads[0].Metadata["encoding"]) != "json/plain" ||
		!bytes.HasPrefix(out.Payloads[0].Data, []byte(`[{"key":"cluster-a/job-"`)) {
		t.Errorf("decode: status %d, %d payloads", code, len(out.Payloads))
	}
	if h.Get("Access-Control-Allow-Origin") != testOrigin || !strings.Contains(h.Get("Vary"), "Origin") {
		t.Errorf("decode CORS headers: %v", h)
	}

	// Encode compresses what the data converter compresses.
	plain, err := converter.GetDefaultDataConverter().ToPayload(window(5000))
	if err != nil {
		t.Fatal(err)
	}
	code, _, body = post(t, srv.URL+"/codec/encode", payloadsJSON(t, plain), "Authorization", "Bearer "+testToken)
	if code != http.StatusOK || !strings.Contains(body, "YmluYXJ5L3psaWI=") { // "binary/zlib"
		t.Errorf("encode: %d %.200s", code, body)
	}

	resp, err = http.Get(srv.URL + "/codec/decode")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d; want 405", resp.StatusCode)
	}
}

func TestCodecHandlerRequiresTheToken(t *testing.T) {
	srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})
	body := payloadsJSON(t)
	for name, tc := range map[string]struct {
		auth string
		code int
	}{
		"no header":          {"", http.StatusUnauthorized},
		"wrong token":        {"Bearer " + strings.Repeat("0", len(testToken)), http.StatusUnauthorized},
		"prefix of token":    {"Bearer " + testToken[:10], http.StatusUnauthorized},
		"token with a tail":  {"Bearer " + testToken + "x", http.StatusUnauthorized},
		"basic scheme":       {"Basic " + testToken, http.StatusUnauthorized},
		"token alone":        {testToken, http.StatusUnauthorized},
		"bearer":             {"Bearer " + testToken, http.StatusOK},
		"scheme in any case": {"bearer " + testToken, http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			code, h, msg := post(t, srv.URL+"/codec/decode", body, "Authorization", tc.auth)
			if code != tc.code {
				t.Fatalf("status %d (%s); want %d", code, msg, tc.code)
			}
			if code == http.StatusUnauthorized && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a WWW-Authenticate: Bearer challenge: %v", h)
			}
		})
	}
}

func TestCodecHandlerWithoutATokenIsClosedUnlessAllowed(t *testing.T) {
	closed := codecServer(t, CodecOptions{AllowOrigin: testOrigin})
	if code, _, msg := post(t, closed.URL+"/codec/decode", payloadsJSON(t)); code != http.StatusUnauthorized {
		t.Errorf("no token configured: %d %s; want 401", code, msg)
	}
	open := codecServer(t, CodecOptions{AllowUnauthenticated: true, AllowOrigin: testOrigin})
	if code, _, msg := post(t, open.URL+"/codec/decode", payloadsJSON(t)); code != http.StatusOK {
		t.Errorf("unauthenticated allowed: %d %s; want 200", code, msg)
	}
}

func TestCodecHandlerAllowsOnlyTheUIOrigin(t *testing.T) {
	srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})
	for name, origin := range map[string]string{
		"other site":       "https://evil.example",
		"other port":       "http://localhost:9999",
		"scheme differs":   "https://localhost:8233",
		"null origin":      "null",
		"origin with path": testOrigin + "/x",
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("preflight from %s: %d, Access-Control-Allow-Origin %q; want 403 and none", origin, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			code, h, msg := post(t, srv.URL+"/codec/decode", payloadsJSON(t), "Origin", origin, "Authorization", "Bearer "+testToken)
			if code != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(msg, testOrigin) {
				t.Errorf("POST from %s: %d %q, Access-Control-Allow-Origin %q; want 403 naming the allowed origin", origin, code, msg, h.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}

func TestCodecHandlerRefusesLargeBodies(t *testing.T) {
	srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})
	big := append([]byte(`{"payloads":[{"data":"`), bytes.Repeat([]byte("A"), MaxCodecRequestBytes)...)
	big = append(big, `"}]}`...)
	code, _, msg := post(t, srv.URL+"/codec/decode", big, "Authorization", "Bearer "+testToken)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "4 MiB") {
		t.Errorf("body of %d bytes: %d %.200q; want 413 naming the 4 MiB limit", len(big), code, msg)
	}
}

func TestCodecHandlerCapsInflatedSize(t *testing.T) {
	t.Run("default cap", func(t *testing.T) {
		// About 1.4 MB that inflate to 1.4 GB: refused after 64 MiB,
		// without inflating the rest.
		srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})
		bomb := zlibBomb(t, 1400)
		body := payloadsJSON(t, bomb)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code, _, msg := post(t, srv.URL+"/codec/decode", body, "Authorization", "Bearer "+testToken)
		runtime.ReadMemStats(&after)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "64 MiB") {
			t.Errorf("payload of %d bytes inflating to 1.4 GB: %d %q; want 413 naming the 64 MiB cap", len(bomb.Data), code, msg)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
			t.Errorf("decoding a %d-byte request allocated %d MiB; want it bounded by the cap", len(body), alloc>>20)
		}
	})
	t.Run("per request, not per payload", func(t *testing.T) {
		srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin, MaxDecodedBytes: 3 << 20})
		one := zlibPayload(t, 2<<20)
		if code, _, msg := post(t, srv.URL+"/codec/decode", payloadsJSON(t, one), "Authorization", "Bearer "+testToken); code != http.StatusOK {
			t.Errorf("one payload of 2 MiB, cap 3 MiB: %d %.200q; want 200", code, msg)
		}
		code, _, msg := post(t, srv.URL+"/codec/decode", payloadsJSON(t, one, one), "Authorization", "Bearer "+testToken)
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("two payloads of 2 MiB each, cap 3 MiB: %d %.200q; want 413", code, msg)
		}
	})
	t.Run("corrupt data", func(t *testing.T) {
		srv := codecServer(t, CodecOptions{Token: testToken, AllowOrigin: testOrigin})
		bad := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/zlib")}, Data: []byte("not zlib")}
		if code, _, msg := post(t, srv.URL+"/codec/decode", payloadsJSON(t, bad), "Authorization", "Bearer "+testToken); code != http.StatusBadRequest {
			t.Errorf("corrupt zlib: %d %q; want 400", code, msg)
		}
	})
}

// TestBoundedDecodeMatchesTheSDK keeps the handler's inflater compatible
// with the SDK's zlib codec the data converter uses.
func TestBoundedDecodeMatchesTheSDK(t *testing.T) {
	dc := DataConverter()
	var in []*commonpb.Payload
	for _, v := range []any{window(3), window(5000), "plain", nil} {
		p, err := dc.ToPayload(v)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, p)
	}
	want, err := converter.NewZlibCodec(converter.ZlibCodecOptions{}).Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBounded(in, MaxCodecDecodedBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d payloads; want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) || !reflect.DeepEqual(got[i].Metadata, want[i].Metadata) {
			t.Errorf("payload %d differs from the SDK's decoding", i)
		}
	}
}
