package js_test

import "testing"

// TestURL: examples from the WHATWG URL Standard and RFC 3986's reference resolution,
// IPv4 and IPv6 hosts, percent-encoding, IDNA, setters and errors.
func TestURL(t *testing.T) {
	const rfcBase = `'http://a/b/c/d;p?q'`
	runCases(t, nil, []jsCase{
		{"spec examples", `return [
			new URL('https:example.org').href,
			new URL('https://////example.com///').href,
			new URL('https://example.com/././foo').href,
			new URL('hello:world').href,
			new URL('https:example.org', 'https://example.com/').href,
			new URL('\\example\\..\\demo/.\\', 'https://example.com/').href,
			new URL('file:///C|/demo').href,
			new URL('..', 'file:///C:/demo').href,
			new URL('file://loc%61lhost/').href,
			new URL('https://user:password@example.org/').href,
			new URL('https://example.org/foo bar').href,
			new URL('https://EXAMPLE.com/../x').href,
			new URL('https://ex%41mple.com/').href,
			new URL('https://example.com:443/').href,
			new URL('http://example.com:0080/').href,
		]`, `["https://example.org/","https://example.com///","https://example.com/foo","hello:world","https://example.com/example.org","https://example.com/demo/","file:///C:/demo","file:///C:/","file:///","https://user:password@example.org/","https://example.org/foo%20bar","https://example.com/x","https://example.com/","https://example.com/","http://example.com/"]`},
		{"RFC 3986 relative resolution", `return ['g:h', 'g', './g', 'g/', '/g', '//g', '?y', 'g?y', '#s', 'g#s', 'g?y#s', ';x', 'g;x', '', '.', './', '..', '../', '../g', '../..', '../../', '../../g', '../../../g', '../../../../g', '/./g', '/../g', 'g.', '.g', 'g..', '..g', './../g', './g/.', 'g/./h', 'g/../h', 'g;x=1/./y', 'g;x=1/../y'].map((r) => new URL(r, ` + rfcBase + `).href)`,
			`["g:h","http://a/b/c/g","http://a/b/c/g","http://a/b/c/g/","http://a/g","http://g/","http://a/b/c/d;p?y","http://a/b/c/g?y","http://a/b/c/d;p?q#s","http://a/b/c/g#s","http://a/b/c/g?y#s","http://a/b/c/;x","http://a/b/c/g;x","http://a/b/c/d;p?q","http://a/b/c/","http://a/b/c/","http://a/b/","http://a/b/","http://a/b/g","http://a/","http://a/","http://a/g","http://a/g","http://a/g","http://a/g","http://a/g","http://a/b/c/g.","http://a/b/c/.g","http://a/b/c/g..","http://a/b/c/..g","http://a/b/g","http://a/b/c/g/","http://a/b/c/g/h","http://a/b/c/h","http://a/b/c/g;x=1/y","http://a/b/c/y"]`},
		{"components", `const u = new URL('https://user:pa%20ss@sub.example.com:8080/p/a/t/h?query=string#hash');
			return [u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin, u.toString(), JSON.stringify({u})]`,
			`["https:","user","pa%20ss","sub.example.com:8080","sub.example.com","8080","/p/a/t/h","?query=string","#hash","https://sub.example.com:8080","https://user:pa%20ss@sub.example.com:8080/p/a/t/h?query=string#hash","{\"u\":\"https://user:pa%20ss@sub.example.com:8080/p/a/t/h?query=string#hash\"}"]`},
		{"IPv6 hosts", `return [
			new URL('http://[0:0:0:0:0:0:0:1]:8080/').host,
			new URL('http://[2001:DB8:0:0:1:0:0:1]/').hostname,
			new URL('http://[::ffff:192.168.0.1]/').hostname,
			new URL('http://[1:0::]/').hostname,
			URL.canParse('http://[::1/'), URL.canParse('http://[1:2:3:4:5:6:7:8:9]/'), URL.canParse('http://[::1]x/'),
		]`, `["[::1]:8080","[2001:db8::1:0:0:1]","[::ffff:c0a8:1]","[1::]",false,false,false]`},
		{"IPv4 hosts", `return ['http://0x7f.1/', 'http://127.1/', 'http://2130706433/', 'http://0300.0250.0.1/'].map((s) => new URL(s).hostname).concat([URL.canParse('http://256.256.256.256/'), URL.canParse('http://1.2.3.4.5/')])`,
			`["127.0.0.1","127.0.0.1","127.0.0.1","192.168.0.1",false,false]`},
		{"percent-encoding", `return [
			new URL('https://example.org/ä b?ü c#ö d').href,
			new URL("https://example.org/?'").search,
			new URL("foo://example.org/?'").search,
			new URL('https://example.org/%2e%2E/x').pathname,
			new URL('https://example.org/a%zzb').pathname,
			new URL('https://example.org/\uD83D\uDE00').pathname,
			new URL('https://example.org/\uD800').pathname,
			new URL('https://example.org/#\u0060 <>').hash,
		]`, `["https://example.org/%C3%A4%20b?%C3%BC%20c#%C3%B6%20d","?%27","?'","/x","/a%zzb","/%F0%9F%98%80","/%EF%BF%BD","#%60%20%3C%3E"]`},
		{"IDNA", `return [
			new URL('https://münchen.de/').hostname,
			new URL('https://☕.example/').hostname,
			new URL('https://EXAMPLE.COM/').hostname,
			new URL('https://xn--mnchen-3ya.de/').hostname,
			new URL('https://faß.de/').hostname,
			new URL('https://example.com\u3002org/').hostname,
			URL.canParse('https://xn--a.com/'), URL.canParse('https://ex ample.com/'), URL.canParse('https://a<b/'),
		]`, `["xn--mnchen-3ya.de","xn--53h.example","example.com","xn--mnchen-3ya.de","xn--fa-hia.de","example.com.org",false,false,false]`},
		{"opaque and non-special", `return [
			new URL('mailto:someone@example.com').pathname, new URL('mailto:x').origin,
			new URL('data:text/plain,hi there').href,
			new URL('non-spec:/.//p').href, new URL('non-spec:/.//p').pathname,
			new URL('blob:https://example.com/1234').origin,
			new URL('javascript:alert(1)').protocol,
		]`, `["someone@example.com","null","data:text/plain,hi there","non-spec:/.//p","//p","https://example.com","javascript:"]`},
		{"setters", `const u = new URL('http://example.com/a?x=1#h');
			const out = [];
			u.pathname = 'b c/d'; out.push(u.href);
			u.port = '8080'; out.push(u.host);
			u.port = 'abc'; out.push(u.port);
			u.port = '80'; out.push(u.host);
			u.protocol = 'https'; out.push(u.href);
			u.protocol = 'mailto'; out.push(u.protocol);
			u.hostname = 'other.example'; out.push(u.href);
			u.username = 'me@x'; u.password = 'p:w'; out.push(u.href);
			u.search = 'q=a b'; out.push(u.search);
			u.hash = ''; out.push(u.href);
			u.href = 'http://new.example/'; out.push(u.href);
			try { u.href = 'nope'; out.push('no error') } catch (e) { out.push(e.name) }
			return out`,
			`["http://example.com/b%20c/d?x=1#h","example.com:8080","8080","example.com","https://example.com/b%20c/d?x=1#h","https:","https://other.example/b%20c/d?x=1#h","https://me%40x:p%3Aw@other.example/b%20c/d?x=1#h","?q=a%20b","https://me%40x:p%3Aw@other.example/b%20c/d?q=a%20b","http://new.example/","TypeError"]`},
		{"errors", `const out = [];
			for (const [u, b] of [['not a url'], ['http://exa mple.com'], ['/relative'], ['x', 'not a base'], ['http://:80/'], ['https://a:b:c/']]) {
				try { new URL(u, b); out.push('parsed ' + u) } catch (e) { out.push(e instanceof TypeError && e.message.includes('Invalid')) }
			}
			out.push(URL.parse('/x'), URL.parse('/x', 'https://h/').href, URL.canParse('/x', 'https://h/'));
			try { new URL() } catch (e) { out.push(e.name) }
			return out`, `[true,true,true,true,true,true,null,"https://h/x",true,"TypeError"]`},
		{"searchParams linked to the URL", `const u = new URL('https://h/p?a=1&b=2');
			const sp = u.searchParams; const out = [sp === u.searchParams];
			sp.append('c', 'x y'); out.push(u.href);
			sp.delete('a'); out.push(u.search);
			u.search = '?z=9'; out.push(sp.get('z'), sp.has('b'));
			sp.delete('z'); out.push(u.href);
			return out`, `[true,"https://h/p?a=1&b=2&c=x+y","?b=2&c=x+y","9",false,"https://h/p"]`},
		{"URLSearchParams", `const out = [];
			const p = new URLSearchParams('?a=1&b=2&a=3&c&=d&e=%zz&f=a+b%20c&g=%F0%9F%98');
			out.push(p.getAll('a'), p.get('c'), p.get(''), p.get('e'), p.get('f'), p.get('g'), p.get('none'), p.size);
			out.push(new URLSearchParams({ x: '1', 'y z': 'ü&=' }).toString());
			out.push(new URLSearchParams([['k', 'v'], ['k', 'w']]).getAll('k'));
			try { new URLSearchParams([['only-one']]) } catch (e) { out.push(e.name) }
			const s = new URLSearchParams('z=1&a=2&z=0&b=\u00e9'); s.sort(); out.push(s.toString());
			s.set('z', 'x'); out.push(s.toString());
			out.push(s.has('z', 'x'), s.has('z', 'nope'));
			s.append('a', '3'); s.delete('a', '2'); out.push([...s].map(([k, v]) => k + '=' + v));
			out.push([...s.keys()], [...s.values()]);
			const seen = []; s.forEach((v, k) => seen.push(k)); out.push(seen);
			out.push(new URLSearchParams('a=\uD800').toString(), Object.prototype.toString.call(s));
			return out`,
			`[["1","3"],"","d","%zz","a b c","\ufffd",null,8,"x=1&y+z=%C3%BC%26%3D",["v","w"],"TypeError","a=2&b=%C3%A9&z=1&z=0","a=2&b=%C3%A9&z=x",true,false,["b=é","z=x","a=3"],["b","z","a"],["é","x","3"],["b","z","a"],"a=%EF%BF%BD","[object URLSearchParams]"]`},
	})
}
