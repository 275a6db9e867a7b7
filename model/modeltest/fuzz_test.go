package modeltest

import (
	"testing"
	"time"
)

// FuzzRequest runs request bodies through the server's decoder,
// validation and cache accounting: nothing may panic, and the usage must
// add up to the prompt.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"tools":[{"name":"t","cache_control":{"type":"ephemeral","ttl":"1h"}}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":{}}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"other"}}],"messages":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeParams(body)
		if err != nil {
			return
		}
		_ = validate(p)
		pr, err := promptOf(p, defaultTTL)
		if err != nil {
			return
		}
		var c cache
		now := time.Unix(0, 0)
		for range 2 {
			u := c.charge(pr, now)
			if u.InputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens < 0 {
				t.Fatalf("negative usage %+v", u)
			}
			if sum := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens; sum != pr.total {
				t.Fatalf("usage %+v adds up to %d, the prompt is %d", u, sum, pr.total)
			}
		}
	})
}
