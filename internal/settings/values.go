package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Int returns a whole-number setting; ok is false when no file sets it.
func (s *Settings) Int(key string) (n int, ok bool, err error) {
	raw, set := s.Raw[key]
	if !set || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false, fmt.Errorf("setting %q in %s is %s; it must be a whole number", key, s.Source[key], raw)
	}
	return int(f), true, nil
}

// String returns a string setting; "" when no file sets it.
func (s *Settings) String(key string) (string, error) {
	raw, set := s.Raw[key]
	if !set || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("setting %q in %s is %s; it must be a string", key, s.Source[key], raw)
	}
	return v, nil
}
