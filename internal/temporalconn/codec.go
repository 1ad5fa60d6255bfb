package temporalconn

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// CompressAbove is the payload size from which payloads are stored
// zlib-compressed. A window over thousands of jobs carries its whole state
// across continue-as-new and returns it in queries and its result; as JSON
// that passes Temporal's 2 MiB payload limit at about two thousand jobs,
// compressed at well over ten thousand. Smaller payloads stay plain JSON,
// readable in the Web UI and by any client without this codec.
const CompressAbove = 128 << 10

// DataConverter is the converter every flinkmaint client and worker uses:
// JSON, with large payloads compressed. Payloads written without
// compression (by older versions, or small ones) decode unchanged.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), LargePayloadCodec())
}

// LargePayloadCodec compresses payloads of CompressAbove bytes or more.
func LargePayloadCodec() converter.PayloadCodec {
	return largePayloadCodec{zlib: converter.NewZlibCodec(converter.ZlibCodecOptions{})}
}

type largePayloadCodec struct{ zlib converter.PayloadCodec }

func (c largePayloadCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) < CompressAbove {
			out[i] = p
			continue
		}
		enc, err := c.zlib.Encode([]*commonpb.Payload{p})
		if err != nil {
			return payloads, err
		}
		out[i] = enc[0]
	}
	return out, nil
}

// Decode inflates compressed payloads and passes every other one through.
func (c largePayloadCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.zlib.Decode(payloads)
}

// Limits of CodecHandler.
const (
	// MaxCodecRequestBytes bounds a request body. Temporal refuses
	// payloads over 2 MiB (its default blob size limit) and the JSON the
	// Web UI posts carries their bytes base64-encoded (4/3 of the size),
	// so the largest payload that can exist arrives in under 3 MiB.
	MaxCodecRequestBytes = 4 << 20
	// MaxCodecDecodedBytes bounds what the payloads of one request may
	// inflate to in total: 32 times the 2 MiB a stored payload may take.
	// zlib inflates up to about 1,000-fold, so without a bound a request
	// of 1.4 MB takes gigabytes of memory. A payload past it only cannot
	// be shown through this endpoint; workers decode through
	// DataConverter, which this bound does not apply to.
	MaxCodecDecodedBytes = 64 << 20
)

// CodecOptions configure CodecHandler.
type CodecOptions struct {
	// Token, when set, must arrive as "Authorization: Bearer <token>".
	Token string
	// AllowUnauthenticated serves requests without a token when Token is
	// empty; otherwise a handler without a token refuses every request.
	AllowUnauthenticated bool
	// AllowOrigin is the one browser origin (the Web UI's, such as
	// http://localhost:8233) CORS lets read the answers. A request with
	// any other Origin is refused; one without Origin (not from a
	// browser) is served.
	AllowOrigin string
	// MaxRequestBytes bounds the request body; 0 means MaxCodecRequestBytes.
	MaxRequestBytes int64
	// MaxDecodedBytes bounds the inflated size of the payloads of one
	// request; 0 means MaxCodecDecodedBytes.
	MaxDecodedBytes int64
}

// CodecHandler serves the codec as a remote codec endpoint
// (<prefix>/encode, <prefix>/decode) so the Temporal Web UI can show
// compressed payloads: point the UI's codec endpoint at it
// (`temporal server start-dev --ui-codec-endpoint http://localhost:9090/codec`).
// The UI calls it from the browser, hence CORS for opts.AllowOrigin. It
// decodes with its own bounded inflater: a request whose body or inflated
// payloads pass the limits is refused with 413.
func CodecHandler(opts CodecOptions) http.Handler {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = MaxCodecRequestBytes
	}
	if opts.MaxDecodedBytes <= 0 {
		opts.MaxDecodedBytes = MaxCodecDecodedBytes
	}
	tokenSum := sha256.Sum256([]byte(opts.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if opts.AllowOrigin == "" || !strings.EqualFold(origin, opts.AllowOrigin) {
				allowed := "serves no browser origin"
				if opts.AllowOrigin != "" {
					allowed = "serves only the Web UI at " + opts.AllowOrigin
				}
				http.Error(w, fmt.Sprintf("origin %q is not allowed: this codec endpoint %s", origin, allowed), http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", opts.AllowOrigin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions { // a preflight carries no credentials
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "use POST with a JSON body of payloads", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case opts.Token != "":
			if !bearerMatches(r.Header.Get("Authorization"), tokenSum) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="flinkmaint codec"`)
				http.Error(w, "missing or wrong token: send Authorization: Bearer <the worker's codec token>", http.StatusUnauthorized)
				return
			}
		case !opts.AllowUnauthenticated:
			w.Header().Set("WWW-Authenticate", `Bearer realm="flinkmaint codec"`)
			http.Error(w, "no codec token is configured: this endpoint accepts no request", http.StatusUnauthorized)
			return
		}
		encode := strings.HasSuffix(r.URL.Path, "/encode")
		if !encode && !strings.HasSuffix(r.URL.Path, "/decode") {
			http.Error(w, "use <endpoint>/encode or <endpoint>/decode", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxRequestBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				http.Error(w, fmt.Sprintf("request body over %s: the codec takes at most %[1]s (Temporal refuses payloads over 2 MiB)", mib(opts.MaxRequestBytes)), http.StatusRequestEntityTooLarge)
			case errors.Is(err, os.ErrDeadlineExceeded):
				http.Error(w, "request body not received within the server's read timeout", http.StatusRequestTimeout)
			default:
				http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
			}
			return
		}
		var in commonpb.Payloads
		if err := protojson.Unmarshal(body, &in); err != nil {
			http.Error(w, "body is not a JSON object of payloads: "+err.Error(), http.StatusBadRequest)
			return
		}
		var out []*commonpb.Payload
		if encode {
			out, err = LargePayloadCodec().Encode(in.Payloads)
		} else {
			out, err = decodeBounded(in.Payloads, opts.MaxDecodedBytes)
		}
		var inflated *inflateLimitError
		switch {
		case errors.As(err, &inflated):
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&commonpb.Payloads{Payloads: out}) // the client went away
	})
}

// bearerMatches reports whether header is "Bearer <token>" for the token
// whose SHA-256 is want, in time independent of where they differ and of
// the token's length.
func bearerMatches(header string, want [sha256.Size]byte) bool {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// inflateLimitError says the payloads of one request inflate past the cap.
type inflateLimitError struct{ limit int64 }

func (e *inflateLimitError) Error() string {
	return fmt.Sprintf("payloads inflate to more than %s in one request: refused", mib(e.limit))
}

// decodeBounded decodes like LargePayloadCodec, which the data converter
// uses (the SDK's zlib codec), but stops inflating once the payloads
// together pass limit bytes.
func decodeBounded(payloads []*commonpb.Payload, limit int64) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	left := limit
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != zlibEncoding {
			out[i] = p
			continue
		}
		zr, err := zlib.NewReader(bytes.NewReader(p.Data))
		if err != nil {
			return nil, fmt.Errorf("payload %d: %w", i, err)
		}
		// Reading to the end verifies the checksum.
		b, err := io.ReadAll(io.LimitReader(zr, left+1))
		if closeErr := zr.Close(); err == nil {
			err = closeErr
		}
		if int64(len(b)) > left {
			return nil, &inflateLimitError{limit: limit}
		}
		if err != nil {
			return nil, fmt.Errorf("payload %d: inflate: %w", i, err)
		}
		left -= int64(len(b))
		out[i] = &commonpb.Payload{}
		if err := proto.Unmarshal(b, out[i]); err != nil {
			return nil, fmt.Errorf("payload %d: %w", i, err)
		}
	}
	return out, nil
}

// zlibEncoding is the encoding the SDK's zlib codec marks payloads with.
const zlibEncoding = "binary/zlib"

// mib renders n bytes as "4 MiB", or as bytes when not whole MiB.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
