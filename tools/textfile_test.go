package tools

import "testing"

func TestSizedBuffer(t *testing.T) {
	tests := []struct {
		size int64
		max  int
		want int
	}{
		{size: 0, max: 8192, want: 1 + minBuffer},
		{size: 1024, max: 65536, want: 1025 + minBuffer},
		{size: 8000, max: 8192, want: 8192},
		{size: 8192, max: 8192, want: 8192},
		{size: 1 << 40, max: 65536, want: 65536},
		{size: -1, max: 4096, want: 4096},
	}
	for _, tt := range tests {
		if got := sizedBuffer(tt.size, tt.max); got != tt.want {
			t.Errorf("sizedBuffer(%d, %d) = %d, want %d", tt.size, tt.max, got, tt.want)
		}
	}
}
