package bench

import "testing"

func TestParseHeapInfoSumsTheGenerations(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      int64
	}{
		{"serial", `29602:
 def new generation   total 78656K, used 1000K [0x00000000f0000000, 0x00000000f5550000, 0x00000000f5550000)
  eden space 69952K,   1% used [0x00000000f0000000, 0x00000000f4450000, 0x00000000f4450000)
  from space 8704K,   0% used [0x00000000f4cd0000, 0x00000000f5550000, 0x00000000f5550000)
  to   space 8704K,   0% used [0x00000000f4450000, 0x00000000f4450000, 0x00000000f4cd0000)
 tenured generation   total 174784K, used 76699K [0x00000000f5550000, 0x0000000100000000, 0x0000000100000000)
   the space 174784K,  43% used [0x00000000f5550000, 0x00000000fa036c20, 0x00000000fa036e00, 0x0000000100000000)
 Metaspace       used 6713K, committed 6912K, reserved 1114112K
`, (1000 + 76699) * 1024},
		{"G1", `4242:
 garbage-first heap   total 262144K, used 12345K [0x00000000f0000000, 0x0000000100000000)
  region size 1024K, 3 young (3072K), 0 survivors (0K)
 Metaspace       used 6713K, committed 6912K, reserved 1114112K
`, 12345 * 1024},
	} {
		got, ok := parseHeapInfo(tc.out)
		if !ok || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := parseHeapInfo("12: Could not attach\n"); ok {
		t.Error("an answer without a heap read as one")
	}
}
