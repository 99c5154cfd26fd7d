package htmldoc

import "testing"

func TestCleanCSS(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "p{color:red;margin:0 1em}", "p{color:red;margin:0 1em}"},
		{"remote url", "p{background:url(http://x.example/a.png)}", "p{background:none}"},
		{"data url kept", "p{background:url(data:image/png;base64,AAAA)}", "p{background:url(data:image/png;base64,AAAA)}"},
		{"import", `@import "http://x.example/a.css"; p{color:red}`, " p{color:red}"},
		{"escaped url", `p{background:u\72 l(http://x.example/a.png)}`, ""},
		{"escaped import", `@\69mport "http://x.example/a.css";`, ""},
		{"image-set", `p{background:image-set("http://x.example/a.png" 1x)}`, ""},
		{"prefixed image-set", `p{background:-webkit-image-set("http://x.example/a.png" 1x)}`, ""},
	}
	for _, tt := range tests {
		if got := cleanCSS(tt.in); got != tt.want {
			t.Errorf("%s: cleanCSS(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
