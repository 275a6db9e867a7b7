package modeltest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// maxBreakpoints is the API's limit on blocks with cache_control.
const maxBreakpoints = 4

// lookback is how many segments before a breakpoint the API checks for an
// earlier cache entry.
const lookback = 20

// defaultTTL is the lifetime of a cache entry without an explicit ttl.
const defaultTTL = 5 * time.Minute

// EstimateTokens is the server's deterministic token count for n bytes of
// canonical JSON: ceil(n/4).
func EstimateTokens(n int) int64 { return int64(n+3) / 4 }

// segment is one cacheable unit of a prompt: a tool, a system block, a
// message's role, or a message content block.
type segment struct {
	tokens int64
	hash   [32]byte // of the whole prefix up to and including this segment
	ttl    time.Duration
	mark   bool // carries cache_control
}

// prompt is a request's prompt cut into segments, in the order the API
// caches it: tools, then system, then messages.
type prompt struct {
	segs  []segment
	total int64
	marks int
}

// promptOf cuts p into segments. Each segment is encoded canonically —
// known fields in a fixed order, other fields sorted, cache_control left
// out — so a prefix hashes the same whichever block carries the breakpoint.
// The model name seeds the hash, as caches are per model.
func promptOf(p *Params, ttl time.Duration) (prompt, error) {
	var pr prompt
	h := sha256.Sum256([]byte(p.Model))
	var cum int64
	add := func(canon []byte, cc json.RawMessage) error {
		sum := sha256.New()
		sum.Write(h[:])
		sum.Write(canon)
		copy(h[:], sum.Sum(nil))
		cum += EstimateTokens(len(canon))
		s := segment{tokens: cum, hash: h}
		if len(cc) > 0 && !isNull(cc) {
			d, err := cacheTTL(cc, ttl)
			if err != nil {
				return err
			}
			s.mark, s.ttl = true, d
			pr.marks++
		}
		pr.segs = append(pr.segs, s)
		return nil
	}
	for i, t := range p.Tools {
		var o jsonw.Object
		o.Sorted(t, func(k string) bool { return k == "cache_control" })
		if err := add(o.Bytes(), t["cache_control"]); err != nil {
			return prompt{}, fmt.Errorf("tools.%d.cache_control: %w", i, err)
		}
	}
	addBlock := func(where string, b model.Block) error {
		cc := b.Extra["cache_control"]
		if cc != nil {
			extra := make(map[string]json.RawMessage, len(b.Extra))
			for k, v := range b.Extra {
				if k != "cache_control" {
					extra[k] = v
				}
			}
			b.Extra = extra
		}
		canon, _ := b.MarshalJSON() // never fails
		if err := add(canon, cc); err != nil {
			return fmt.Errorf("%s.cache_control: %w", where, err)
		}
		return nil
	}
	for i, b := range p.System {
		if err := addBlock(fmt.Sprintf("system.%d", i), b); err != nil {
			return prompt{}, err
		}
	}
	for i, m := range p.Messages {
		var o jsonw.Object
		o.Str("role", m.Role)
		if err := add(o.Bytes(), nil); err != nil {
			return prompt{}, err
		}
		for j, b := range m.Content {
			if err := addBlock(fmt.Sprintf("messages.%d.content.%d", i, j), b); err != nil {
				return prompt{}, err
			}
		}
	}
	pr.total = cum
	return pr, nil
}

// cacheTTL reads the ttl of a cache_control value: "5m", "1h", or absent
// for def.
func cacheTTL(cc json.RawMessage, def time.Duration) (time.Duration, error) {
	var v struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(cc, &v); err != nil {
		return 0, fmt.Errorf("not an object: %w", err)
	}
	if v.Type != "ephemeral" {
		return 0, fmt.Errorf("type %q: only \"ephemeral\" is supported", v.Type)
	}
	switch v.TTL {
	case "":
		return def, nil
	case "5m":
		return 5 * time.Minute, nil
	case "1h":
		return time.Hour, nil
	}
	return 0, fmt.Errorf("ttl %q: use \"5m\" or \"1h\"", v.TTL)
}

// cache is the server's prompt cache: prefix hashes and when they expire.
// The Server's mutex guards it.
type cache struct {
	entries  map[[32]byte]time.Time
	minToken int64
}

// charge computes the usage of pr at time now and updates the cache, as
// the API does: cache_read_input_tokens is the longest prefix, found at or
// up to 20 segments before some breakpoint, that an earlier request cached
// and that has not expired; cache_creation_input_tokens is the rest up to
// the last breakpoint, which is then cached; input_tokens is what follows
// the last breakpoint. A hit refreshes the entry's lifetime. Prefixes
// shorter than the minimum are neither read nor written.
func (c *cache) charge(pr prompt, now time.Time) model.Usage {
	if c.entries == nil {
		c.entries = make(map[[32]byte]time.Time)
	}
	var read int64
	hit := -1
	last := -1
	for i, s := range pr.segs {
		if !s.mark {
			continue
		}
		last = i
		for j := i; j >= 0 && j > i-lookback; j-- {
			exp, ok := c.entries[pr.segs[j].hash]
			if !ok || !now.Before(exp) {
				continue
			}
			if pr.segs[j].tokens > read {
				read, hit = pr.segs[j].tokens, j
			}
			break
		}
	}
	var created int64
	if last >= 0 && pr.segs[last].tokens > read && pr.segs[last].tokens >= c.minToken {
		created = pr.segs[last].tokens - read
	}
	if hit >= 0 {
		c.refresh(pr.segs[hit].hash, now.Add(ttlAt(pr, hit)))
	}
	for _, s := range pr.segs {
		if s.mark && s.tokens >= c.minToken {
			c.refresh(s.hash, now.Add(s.ttl))
		}
	}
	for h, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, h)
		}
	}
	return model.Usage{
		InputTokens:              pr.total - read - created,
		CacheReadInputTokens:     read,
		CacheCreationInputTokens: created,
	}
}

// ttlAt is the lifetime to renew a hit at segment i with: the ttl of the
// first breakpoint at or after it.
func ttlAt(pr prompt, i int) time.Duration {
	for _, s := range pr.segs[i:] {
		if s.mark {
			return s.ttl
		}
	}
	return defaultTTL
}

func (c *cache) refresh(h [32]byte, exp time.Time) {
	if exp.After(c.entries[h]) {
		c.entries[h] = exp
	}
}
