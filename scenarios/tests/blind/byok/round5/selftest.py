#!/usr/bin/env python3
"""Self-test of the round-5 Perl key service: the baseline keeps every rule below
(with no arguments, with --static-key, with --expires-in 10) and each defect breaks the
rule of its checker_hint. Standard library only. Usage: selftest.py [-j N] [NAME ...]"""
import base64, concurrent.futures as cf, hashlib, hmac, http.client, json, os, re, socket, subprocess
import sys, threading, time, uuid
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
CID, SECRET, STATIC = 'pl-client', 'Vb7-qZ2wLk9_Mx4Tn8Ra', 'sk_pl_3Hq8Wd2Zx6Nr5Kt'
P = '/acme/byok/v1'
B64 = re.compile(r'\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z')
UUID_RE = re.compile(r'\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z')


def ts(delta=0):
    t = datetime.now(timezone.utc) + timedelta(seconds=delta)
    return t.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (t.microsecond // 1000)


_flip = [0]
def trace_headers():
    _flip[0] += 1
    tid = str(uuid.uuid4())
    if _flip[0] % 2:
        tid = tid.upper()
    return {'x-request-id': str(uuid.uuid4()), 'x-request-timestamp': ts(), 'x-trace-id': tid}


class Resp:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
    def h(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None
    def json(self):
        try:
            return json.loads(self.body)
        except Exception:
            return None


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b'=').decode()


def b64u_dec(s):
    return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))


class Svc:
    def __init__(self, defect=None, args=()):
        self.defect, self.args = defect, list(args)
        self.static = '--static-key' in self.args
        self.expires = int(self.args[self.args.index('--expires-in') + 1]) if '--expires-in' in self.args else 3600
        cmd = ['perl', os.path.join(HERE, 'service.pl'), '--port', '0'] + self.args
        if defect:
            cmd += ['--defect', defect]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.port = json.loads(self.p.stdout.readline())['port']
        w = ['perl', os.path.join(HERE, 'service.pl'), 'wrap', '--alias', 'ruby'] + (['--defect', defect] if defect else [])
        out = json.loads(subprocess.run(w, capture_output=True, text=True, check=True).stdout)
        self.ek, self.pt = out['encrypted_key'], out['plaintext_key']
        self.log = []
        self._tok = None

    def close(self):
        try:
            os.killpg(self.p.pid, 15)
        except Exception:
            pass
        self.p.wait()

    def req(self, method, path, body=b'', headers=None, trace=True, ctype=None, auth=None, raw_headers=None):
        hd = trace_headers() if trace else {}
        if headers:
            for k, v in headers.items():
                if v is None:
                    hd.pop(k, None)
                else:
                    hd[k] = v
        if ctype:
            hd['Content-Type'] = ctype
        if auth is not None:
            hd['Authorization'] = auth
        if isinstance(body, str):
            body = body.encode()
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=20)
        try:
            c.putrequest(method, path, skip_accept_encoding=True)
            for k, v in hd.items():
                c.putheader(k, v)
            if body or method in ('POST', 'PUT', 'PATCH'):
                c.putheader('Content-Length', str(len(body)))
            c.endheaders(body if body else None)
            r = c.getresponse()
            data = r.read()
            resp = Resp(r.status, r.getheaders(), data)
        except (ConnectionError, OSError, http.client.HTTPException) as e:
            resp = Resp(0, [], str(e).encode())
        finally:
            c.close()
        resp.sent = hd
        resp.method = method
        resp.path = path
        self.log.append(resp)
        return resp

    def basic(self, i=CID, s=SECRET):
        return 'Basic ' + base64.b64encode(f'{i}:{s}'.encode()).decode()

    def auth(self, body='grant_type=client_credentials', ctype='application/x-www-form-urlencoded', auth=None, **kw):
        return self.req('POST', P + '/auth', body, ctype=ctype, auth=self.basic() if auth is None else auth, **kw)

    def token(self, fresh=False):
        if self.static and not fresh:
            return STATIC
        if self._tok is None or fresh:
            r = self.auth()
            j = r.json() or {}
            d = j.get('data', j)
            t = d.get('access_token')
            if fresh:
                return t
            self._tok = t
        return self._tok

    def decrypt(self, alias='ruby', ek=None, tok=None, body=None, ctype='application/json', auth=None, **kw):
        if body is None:
            body = json.dumps({'data': {'key_alias': alias, 'encrypted_key': self.ek if ek is None else ek}})
        if auth is None:
            auth = 'Bearer ' + (tok or self.token())
        return self.req('POST', P + '/decrypt-key', body, ctype=ctype, auth=None if auth == '-' else auth, **kw)

    def rotate(self, alias='ruby', tok=None, body=None, ctype='application/json', auth=None, **kw):
        if body is None:
            body = json.dumps({'data': {'key_alias': alias}})
        if auth is None:
            auth = 'Bearer ' + (tok or self.token())
        return self.req('POST', P + '/rotate-key', body, ctype=ctype if body else None, auth=None if auth == '-' else auth, **kw)


def is4(r):
    return 400 <= r.status < 500


def strict_b64(s):
    return isinstance(s, str) and bool(B64.match(s)) and len(s) > 0


def pt_of(r, field='plaintext_key'):
    j = r.json() or {}
    d = j.get('data') if isinstance(j, dict) else None
    return d.get(field) if isinstance(d, dict) else None


def envelope(ek):
    return base64.b64decode(ek[8:])


def re_env(blob):
    return 'byok:v1:' + base64.b64encode(blob).decode()


class Fail(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Fail(msg)


def all_refused(items, pred=is4, what='4xx'):
    bad = [(name, r.status) for name, r in items if not pred(r)]
    need(not bad, f'not {what}: {bad}')


# ------------------------------------------------------------------ rule checks
CHECKS = {}
def check(name, mode='plain'):
    def deco(f):
        CHECKS[name] = (f, mode)
        return f
    return deco


@check('auth.shape')
def c_auth_shape(s):
    r = s.auth()
    need(r.status == 200, f'/auth {r.status}')
    d = (r.json() or {}).get('data')
    need(isinstance(d, dict) and isinstance(d.get('access_token'), str), f'shape {r.body[:200]}')


@check('auth.token_type')
def c_tt(s):
    d = s.auth().json()['data']
    need(d['token_type'].lower() == 'bearer', d['token_type'])


@check('auth.expires_in')
def c_ei(s):
    d = s.auth().json()['data']
    need(type(d['expires_in']) is int and d['expires_in'] > 0, repr(d['expires_in']))


@check('auth.expires_in_bound')
def c_eib(s):
    d = s.auth().json()['data']
    need(d['expires_in'] <= 86400, repr(d['expires_in']))


@check('auth.jwt')
def c_jwt(s):
    t = s.auth().json()['data']['access_token']
    parts = t.split('.')
    need(len(parts) == 3, f'{len(parts)} parts')
    h = json.loads(b64u_dec(parts[0]))
    need(h.get('alg') not in (None, 'none'), 'alg')


@check('auth.jwt_exp')
def c_jwt_exp(s):
    d = s.auth().json()['data']
    c = json.loads(b64u_dec(d['access_token'].split('.')[1]))
    need(abs(c['exp'] - c['iat'] - d['expires_in']) <= 5, f"exp {c['exp']} iat {c['iat']}")


@check('auth.wrong_secret')
def c_wrong_secret(s):
    forms = [SECRET + 'x', SECRET[:-1], SECRET[1:], SECRET[:10], SECRET.swapcase(), '', ' ' + SECRET,
             SECRET + ' ', SECRET + '\t', SECRET + ':x']
    all_refused([(f, s.auth(auth=s.basic(s=f))) for f in forms], lambda r: r.status == 401, '401')


@check('auth.unknown_client')
def c_unknown_client(s):
    forms = ['someone', CID.upper(), CID + 'x', CID[:-1], 'x' + CID]
    all_refused([(f, s.auth(auth=s.basic(i=f))) for f in forms], lambda r: r.status == 401, '401')


@check('auth.bearer_credentials')
def c_auth_bearer(s):
    t = s.token(fresh=True)
    all_refused([('token', s.auth(auth='Bearer ' + t)), ('secret', s.auth(auth='Bearer ' + SECRET))],
                lambda r: r.status == 401, '401')


@check('auth.no_authorization')
def c_auth_noauth(s):
    r1 = s.req('POST', P + '/auth', 'grant_type=client_credentials', ctype='application/x-www-form-urlencoded')
    r2 = s.req('POST', P + '/auth', f'grant_type=client_credentials&client_id={CID}&client_secret={SECRET}',
               ctype='application/x-www-form-urlencoded')
    all_refused([('none', r1), ('form', r2)], lambda r: r.status == 401, '401')


@check('auth.malformed_basic')
def c_malformed_basic(s):
    forms = {'notb64': 'Basic !!!***', 'nocolon': 'Basic ' + base64.b64encode(b'pl-client').decode(), 'scheme': 'Basic',
             'nonutf8': 'Basic ' + base64.b64encode(b'pl-client:\xff\xfe\xfd').decode()}
    all_refused([(k, s.auth(auth=v)) for k, v in forms.items()], lambda r: r.status in (400, 401), '400/401')


@check('auth.wrong_grant_type')
def c_grant(s):
    forms = ['grant_type=password', 'grant_type=client_credentials_v2', 'grant_type=client', 'grant_type=CLIENT_CREDENTIALS',
             'grant_type=', '', 'grant_type=client_credentials&grant_type=password',
             'grant_type=password&grant_type=client_credentials']
    all_refused([(f, s.auth(body=f)) for f in forms], lambda r: r.status == 400, '400')


@check('auth.content_type')
def c_auth_ct(s):
    items = [('json', s.auth(body='{"grant_type":"client_credentials"}', ctype='application/json')),
             ('text', s.auth(ctype='text/plain')),
             ('none', s.req('POST', P + '/auth', 'grant_type=client_credentials', auth=s.basic())),
             ('multipart', s.auth(body='--b\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nclient_credentials\r\n--b--\r\n',
                                  ctype='multipart/form-data; boundary=b'))]
    all_refused(items, lambda r: r.status in (400, 415), '400/415')
    r = s.auth(ctype='application/x-www-form-urlencoded; charset=utf-8')
    need(r.status == 200, f'charset form {r.status}')


@check('decrypt.plaintext')
def c_dec_plain(s):
    r = s.decrypt()
    need(r.status == 200, f'{r.status} {r.body[:200]}')
    p = pt_of(r)
    need(strict_b64(p) and base64.b64decode(p) == base64.b64decode(s.pt) and len(base64.b64decode(p)) == 32, repr(p))


@check('decrypt.shape')
def c_dec_shape(s):
    r = s.decrypt()
    need(r.status == 200 and isinstance(pt_of(r), str), r.body[:200])


def bearer_items(s, refuse_fn):
    out = []
    for ep, call in (('decrypt', s.decrypt), ('rotate', s.rotate)):
        for name, kw in refuse_fn():
            out.append((f'{ep}:{name}', call(**kw)))
    return out


@check('decrypt.no_token')
def c_no_token(s):
    t = s.token()
    def forms():
        return [('none', dict(auth='-')), ('bearer-alone', dict(auth='Bearer')),
                ('empty', dict(auth='')), ('Token', dict(auth='Token ' + t)), ('JWT', dict(auth='JWT ' + t))]
    items = bearer_items(s, forms)
    items.append(('query', s.req('POST', P + '/decrypt-key?access_token=' + t,
                                 json.dumps({'data': {'key_alias': 'ruby', 'encrypted_key': s.ek}}), ctype='application/json')))
    items.append(('body', s.req('POST', P + '/decrypt-key',
                                json.dumps({'access_token': t, 'data': {'key_alias': 'ruby', 'encrypted_key': s.ek}}),
                                ctype='application/json')))
    all_refused(items, lambda r: r.status == 401, '401')


def garbage():
    return 'x9f2kQ7pLm3Zr8Tw', '.'.join(b64u(os.urandom(n)) for n in (20, 40, 32))


@check('decrypt.garbage_token')
def c_garbage(s):
    g1, g2 = garbage()
    items = bearer_items(s, lambda: [('text', dict(tok=g1)), ('parts', dict(tok=g2))])
    all_refused(items, lambda r: r.status == 401, '401')


def forge(tok, header=None, claims=None, sig=None):
    h, c, g = tok.split('.')
    if header is not None:
        h = b64u(json.dumps(header).encode())
    if claims is not None:
        c = b64u(json.dumps(claims).encode())
    return f'{h}.{c}.{g if sig is None else sig}'


@check('decrypt.tampered_token')
def c_tampered(s):
    t = s.token(fresh=True)
    h, c, g = t.split('.')
    cl = json.loads(b64u_dec(c))
    other = b64u(hmac.new(os.urandom(32), f'{h}.{c}'.encode(), hashlib.sha256).digest())
    forms = {'sigchar': f'{h}.{c}.{g[:5]}{"A" if g[5] != "A" else "B"}{g[6:]}', 'sigempty': f'{h}.{c}.',
             'sighalf': f'{h}.{c}.{g[:len(g)//2]}', 'otherkey': f'{h}.{c}.{other}',
             'exp': forge(t, claims=dict(cl, exp=cl['exp'] + 3600)), 'sub': forge(t, claims=dict(cl, sub='other'))}
    s.decrypt(tok=t)  # the genuine token first
    items = bearer_items(s, lambda: [(k, dict(tok=v)) for k, v in forms.items()])
    all_refused(items, lambda r: r.status == 401, '401')


@check('decrypt.alg_none')
def c_alg_none(s):
    t = s.token(fresh=True)
    h, c, g = t.split('.')
    forms = {}
    for a in ('none', 'None', 'NONE', 'nOnE'):
        forms['unsigned-' + a] = forge(t, header={'alg': a, 'typ': 'JWT'}, sig='')
    forms['none-keep'] = forge(t, header={'alg': 'none', 'typ': 'JWT'})
    forms['noalg'] = forge(t, header={'typ': 'JWT'}, sig='')
    forms['noalg-keep'] = forge(t, header={'typ': 'JWT'})
    forms['rs256-keep'] = forge(t, header={'alg': 'RS256', 'typ': 'JWT'})
    items = bearer_items(s, lambda: [(k, dict(tok=v)) for k, v in forms.items()])
    all_refused(items, lambda r: r.status == 401, '401')


@check('decrypt.basic_credentials')
def c_basic_creds(s):
    forms = [('basic', dict(auth=s.basic())), ('secret', dict(tok=SECRET)), ('basicvalue', dict(tok=s.basic()[6:]))]
    if s.static:
        forms += [('key-user', dict(auth='Basic ' + base64.b64encode(f'{STATIC}:'.encode()).decode())),
                  ('key-pass', dict(auth='Basic ' + base64.b64encode(f':{STATIC}'.encode()).decode()))]
    all_refused(bearer_items(s, lambda: forms), lambda r: r.status == 401, '401')


@check('decrypt.wrong_api_key', 'static')
def c_wrong_key(s):
    k = STATIC
    forms = [k[:5] + ('X' if k[5] != 'X' else 'Y') + k[6:], k.swapcase(), k[:len(k)//2], k[1:], k[:-1], k + 'x']
    all_refused(bearer_items(s, lambda: [(f, dict(tok=f)) for f in forms]), lambda r: r.status == 401, '401')


@check('decrypt.unknown_alias')
def c_unknown_alias(s):
    all_refused([(a, s.decrypt(alias=a)) for a in ('nope', 'RUBY', 'Ruby', 'ruby ', 'rubyx')])


@check('decrypt.other_alias')
def c_other_alias(s):
    all_refused([('onyx', s.decrypt(alias='onyx'))])


@check('decrypt.missing_prefix')
def c_missing_prefix(s):
    all_refused([('bare', s.decrypt(ek=s.ek[8:]))])


@check('decrypt.wrong_prefix')
def c_wrong_prefix(s):
    rest = s.ek[8:]
    forms = ['kms:v1:' + rest, 'BYOK:V1:' + rest, 'byok:V1:' + rest, ' byok:v1:' + rest, 'byok:v1::' + rest,
             'byok:v1:byok:v1:' + rest, rest + 'byok:v1:']
    all_refused([(f[:12], s.decrypt(ek=f)) for f in forms])


@check('decrypt.v2_prefix')
def c_v2(s):
    all_refused([('v2', s.decrypt(ek='byok:v2:' + s.ek[8:]))])


@check('decrypt.bad_base64')
def c_bad_b64(s):
    rest = s.ek[8:]
    forms = {'bang': 'byok:v1:' + rest[:10] + '!' + rest[10:], 'space': 'byok:v1:' + rest[:10] + ' ' + rest[10:],
             'nonascii': 'byok:v1:' + rest[:10] + '\u00e9' + rest[10:], 'nothing': 'byok:v1:',
             'one': 'byok:v1:' + base64.b64encode(b'\x01').decode(), 'four': 'byok:v1:' + base64.b64encode(b'\x01\0\0\0').decode()}
    all_refused([(k, s.decrypt(ek=v)) for k, v in forms.items()])


def flipped(s, i):
    b = bytearray(envelope(s.ek))
    b[i] ^= 0x01
    return re_env(bytes(b))


@check('decrypt.flipped_first')
def c_f_first(s):
    all_refused([('first', s.decrypt(ek=flipped(s, 0)))])


@check('decrypt.flipped_nonce')
def c_f_nonce(s):
    all_refused([('nonce', s.decrypt(ek=flipped(s, 11)))])


@check('decrypt.flipped_byte')
def c_f_mid(s):
    n = len(envelope(s.ek))
    all_refused([('middle', s.decrypt(ek=flipped(s, n // 2)))], lambda r: 400 <= r.status < 500)


@check('decrypt.flipped_tag')
def c_f_tag(s):
    n = len(envelope(s.ek))
    all_refused([('tag0', s.decrypt(ek=flipped(s, n - 16)))])


@check('decrypt.flipped_last')
def c_f_last(s):
    n = len(envelope(s.ek))
    all_refused([('last', s.decrypt(ek=flipped(s, n - 1)))])


@check('decrypt.flipped_any_byte')
def c_f_any(s):
    n = len(envelope(s.ek))
    all_refused([(i, s.decrypt(ek=flipped(s, i))) for i in range(n)])


@check('decrypt.extended_key')
def c_ext(s):
    b = envelope(s.ek)
    all_refused([(k, s.decrypt(ek=re_env(b + b'\0' * k))) for k in (1, 16)])


@check('decrypt.truncated_key')
def c_trunc(s):
    b = envelope(s.ek)
    all_refused([(k, s.decrypt(ek=re_env(b[:-k]))) for k in range(1, 9)])


MISSING = {'no-data': {}, 'no-alias': {'data': {'encrypted_key': None}}, 'no-ek': {'data': {'key_alias': 'ruby'}}}
def missing_bodies(s):
    out = {}
    for k, v in MISSING.items():
        v = json.loads(json.dumps(v))
        if 'data' in v and 'encrypted_key' in v['data']:
            v['data']['encrypted_key'] = s.ek
        out[k] = json.dumps(v)
    return out


@check('decrypt.missing_fields')
def c_missing(s):
    all_refused([(k, s.decrypt(body=b)) for k, b in missing_bodies(s).items()])


@check('decrypt.missing_fields_code')
def c_missing_code(s):
    items = [(k, s.decrypt(body=b)) for k, b in missing_bodies(s).items()]
    all_refused(items, lambda r: r.status == 400 and (r.json() or {}).get('error', {}).get('code') == 'INVALID_REQUEST',
                '400 INVALID_REQUEST')


@check('decrypt.malformed_body')
def c_malformed(s):
    ek = s.ek
    bodies = {'invalid': '{"data":', 'empty': '', 'null': 'null', 'num': '1', 'str': '"x"', 'true': 'true', 'arr': '[]',
              'data-null': '{"data":null}', 'data-str': '{"data":"x"}', 'data-arr': '{"data":[]}',
              'nested': json.dumps({'data': {'data': {'key_alias': 'ruby', 'encrypted_key': ek}}}),
              'deep': '[' * 5000 + ']' * 5000, 'bignum': '{"data":{"key_alias":' + '9' * 5000 + ',"encrypted_key":"x"}}'}
    for f in ('key_alias', 'encrypted_key'):
        for name, val in (('num', 1), ('null', None), ('obj', {}), ('arr', [])):
            d = {'key_alias': 'ruby', 'encrypted_key': ek}
            d[f] = val
            bodies[f'{f}-{name}'] = json.dumps({'data': d})
    items = [(k, s.decrypt(body=b)) for k, b in bodies.items()]
    items.append(('nonutf8', s.decrypt(body=b'{"data":{"key_alias":"ru\xffby","encrypted_key":"' + ek.encode() + b'"}}')))
    all_refused(items)


@check('decrypt.content_type')
def c_dec_ct(s):
    items = [(ct, s.decrypt(ctype=ct)) for ct in ('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
                                              'application/json-seq', 'application/jsonx')]
    items.append(('none', s.req('POST', P + '/decrypt-key', json.dumps({'data': {'key_alias': 'ruby', 'encrypted_key': s.ek}}),
                                auth='Bearer ' + s.token())))
    all_refused(items)
    r = s.decrypt(ctype='application/json; charset=utf-8')
    need(r.status == 200, f'charset {r.status}')


def raw_chunked(s, path, tok, total):
    so = socket.create_connection(('127.0.0.1', s.port), timeout=20)
    hd = trace_headers()
    head = f'POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n'
    head += ''.join(f'{k}: {v}\r\n' for k, v in hd.items()) + '\r\n'
    try:
        so.sendall(head.encode())
        chunk = b'{"data":{"key_alias":"ruby","encrypted_key":"' + s.ek.encode() + b'","pad":"' + b'a' * 8192
        sent = 0
        so.sendall(b'%x\r\n' % len(chunk) + chunk + b'\r\n')
        sent += len(chunk)
        piece = b'a' * 16384
        while sent < total:
            so.sendall(b'%x\r\n' % len(piece) + piece + b'\r\n')
            sent += len(piece)
        tail = b'"}}'
        so.sendall(b'%x\r\n' % len(tail) + tail + b'\r\n0\r\n\r\n')
    except OSError:
        pass
    try:
        data = b''
        while b'\r\n' not in data:
            d = so.recv(4096)
            if not d:
                break
            data += d
        m = re.match(rb'HTTP/1\.1 (\d+)', data)
        return Resp(int(m.group(1)) if m else 0, [], data)
    except OSError:
        return Resp(0, [], b'')
    finally:
        so.close()


def ok_or_closed(r):
    return is4(r) or r.status == 0


@check('decrypt.oversized')
def c_oversized(s):
    big = json.dumps({'data': {'key_alias': 'ruby', 'encrypted_key': s.ek}, 'pad': 'a' * (1 << 20)})
    items = [('content-length', s.decrypt(body=big)), ('chunked', raw_chunked(s, P + '/decrypt-key', s.token(), 1 << 20))]
    all_refused(items, ok_or_closed)


def rot(s, alias='ruby'):
    r = s.rotate(alias=alias)
    need(r.status == 200, f'rotate {alias}: {r.status} {r.body[:200]}')
    return r


@check('rotate.shape')
def c_rot_shape(s):
    d = (rot(s).json() or {}).get('data') or {}
    need(all(isinstance(d.get(k), str) for k in ('encrypted_dek', 'key_alias', 'plaintext_dek'))
         and d['encrypted_dek'].startswith('byok:v1:'), repr(d)[:200])


@check('rotate.alias')
def c_rot_alias(s):
    for a in ('ruby', 'onyx'):
        d = rot(s, a).json()['data']
        need(d['key_alias'] == a, f'asked {a}, got {d["key_alias"]}')


@check('rotate.plaintext')
def c_rot_plain(s):
    p = rot(s).json()['data']['plaintext_dek']
    need(strict_b64(p) and len(base64.b64decode(p)) == 32, repr(p))


@check('rotate.roundtrip')
def c_rot_rt(s):
    for a in ('ruby', 'onyx'):
        d = rot(s, a).json()['data']
        r = s.decrypt(alias=a, ek=d['encrypted_dek'])
        need(r.status == 200 and pt_of(r) == d['plaintext_dek'], f'{a}: {r.status}')


def four(s):
    return [rot(s).json()['data'] for _ in range(4)]


@check('rotate.fresh')
def c_rot_fresh(s):
    ks = [d['plaintext_dek'] for d in four(s)] + [s.pt]
    need(len(set(ks)) == len(ks), 'a data key repeats')


@check('rotate.old_keys')
def c_rot_old(s):
    first = rot(s).json()['data']
    four(s)
    for name, ek, pt in (('wrapped', s.ek, s.pt), ('first', first['encrypted_dek'], first['plaintext_dek'])):
        r = s.decrypt(ek=ek)
        need(r.status == 200 and pt_of(r) == pt, f'{name}: {r.status}')


@check('rotate.body')
def c_rot_body(s):
    tok = s.token()
    r = s.req('POST', P + '/rotate-key', b'', auth='Bearer ' + tok)
    need(r.status == 200, f'no body: {r.status}')
    bodies = {'invalid': '{"data":', 'null': 'null', 'data-null': '{"data":null}', 'data-str': '{"data":"x"}', 'data-arr': '{"data":[]}',
              'alias-num': '{"data":{"key_alias":1}}', 'alias-null': '{"data":{"key_alias":null}}',
              'alias-arr': '{"data":{"key_alias":[]}}', 'alias-obj': '{"data":{"key_alias":{}}}'}
    items = [(k, s.rotate(body=b)) for k, b in bodies.items()]
    items.append(('text', s.rotate(ctype='text/plain')))
    items.append(('noctype', s.req('POST', P + '/rotate-key', json.dumps({'data': {'key_alias': 'ruby'}}), auth='Bearer ' + tok)))
    items.append(('1MiB', s.rotate(body=json.dumps({'data': {'key_alias': 'ruby'}, 'pad': 'a' * (1 << 20)}))))
    all_refused(items, ok_or_closed)


@check('rotate.unknown_alias')
def c_rot_unknown(s):
    all_refused([('nope', s.rotate(alias='nope'))])


@check('rotate.unique_nonce')
def c_rot_nonce(s):
    def conn_rot():
        return s.rotate().json()['data']['encrypted_dek']
    eks = [conn_rot() for _ in range(4)] + [s.ek]
    nonces = [envelope(e)[5:17] for e in eks]
    need(len(set(nonces)) == len(nonces), 'a nonce repeats')
    need(not any(n[:8] == b'\0' * 8 for n in nonces), 'counter nonce')


@check('rotate.key_hidden')
def c_rot_hidden(s):
    for d in four(s):
        k = base64.b64decode(d['plaintext_dek'])
        blob, text = envelope(d['encrypted_dek']), d['encrypted_dek']
        for i in range(len(k) - 7):
            part = k[i:i + 8]
            need(part not in blob and part.hex() not in text.lower(), 'key readable')


@check('headers.trace_echo')
def c_trace(s):
    rs = [s.auth(), s.decrypt(), s.decrypt(alias='nope'), s.auth(auth=s.basic(s='bad')), s.req('GET', P + '/auth'),
          s.decrypt(), s.rotate()]
    bad = [(r.path, r.status, r.sent.get('x-trace-id'), r.h('X-Trace-Id')) for r in rs if r.h('X-Trace-Id') != r.sent.get('x-trace-id')]
    need(not bad, f'echo: {bad[:3]}')


@check('headers.no_trace_id')
def c_no_trace(s):
    r = s.decrypt(headers={'x-trace-id': None})
    need(r.status == 200, f'{r.status}')


@check('headers.malformed')
def c_hdr_malformed(s):
    forms = {'ts-nodate': {'x-request-timestamp': 'not-a-date'}, 'ts-nooffset': {'x-request-timestamp': ts()[:-1]},
             'ts-dateonly': {'x-request-timestamp': ts()[:10]}, 'rid-nouuid': {'x-request-id': 'abc'},
             'tid-nouuid': {'x-trace-id': 'abc'}, 'ts-missing': {'x-request-timestamp': None}, 'rid-missing': {'x-request-id': None}}
    all_refused([(k, s.decrypt(headers=v)) for k, v in forms.items()], lambda r: 0 < r.status < 500, 'no 5xx')


@check('headers.request_id_required')
def c_rid(s):
    all_refused([('missing', s.decrypt(headers={'x-request-id': None})), ('nouuid', s.decrypt(headers={'x-request-id': 'abc'}))])


@check('headers.skewed_timestamp')
def c_skew(s):
    all_refused([(d, s.decrypt(headers={'x-request-timestamp': ts(d)})) for d in (-3600, -600, 600, 3600)])


@check('headers.request_duration')
def c_duration(s):
    for r in (s.auth(), s.decrypt(), s.decrypt(alias='nope')):
        v = r.h('X-Request-Duration')
        need(v is not None and re.match(r'^\d+(\.\d+)?$', v), f'{r.path}: {v!r}')


def methods_check(s, ep, body):
    tok = s.token()
    bad = []
    for m in ('GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'):
        auth = s.basic() if ep == 'auth' else 'Bearer ' + tok
        r = s.req(m, P + '/' + ep, body, auth=auth,
                  ctype='application/x-www-form-urlencoded' if ep == 'auth' else 'application/json')
        allow = [x.strip().upper() for x in (r.h('Allow') or '').split(',') if x.strip()]
        ok = 'POST' in allow and m not in allow and (r.status == 405 or (m == 'OPTIONS' and 200 <= r.status < 300))
        if not ok:
            bad.append((m, r.status, r.h('Allow')))
    need(not bad, f'{ep}: {bad}')


@check('methods.auth')
def c_m_auth(s):
    methods_check(s, 'auth', 'grant_type=client_credentials')


@check('methods.decrypt')
def c_m_dec(s):
    methods_check(s, 'decrypt-key', json.dumps({'data': {'key_alias': 'ruby', 'encrypted_key': s.ek}}))


@check('methods.rotate')
def c_m_rot(s):
    methods_check(s, 'rotate-key', json.dumps({'data': {'key_alias': 'ruby'}}))


def error_sample(s):
    return [s.auth(auth=s.basic(s='bad')), s.auth(body='grant_type=x'), s.auth(ctype='text/plain'), s.decrypt(alias='nope'),
            s.decrypt(ek=flipped(s, 30)), s.decrypt(body='{"data":'), s.req('PUT', P + '/decrypt-key', '{}', ctype='application/json'),
            s.decrypt(tok='garbage'), s.decrypt(body=json.dumps({'pad': 'a' * 40000}))]


@check('errors.json')
def c_err_json(s):
    bad = [(r.path, r.status, r.h('Content-Type')) for r in error_sample(s)
           if not ((r.h('Content-Type') or '').split(';')[0].strip() == 'application/json' and r.json() is not None)]
    need(not bad, f'{bad[:3]}')


@check('errors.shape')
def c_err_shape(s):
    def ok(r):
        e = (r.json() or {}).get('error')
        return isinstance(e, dict) and isinstance(e.get('code'), str) and isinstance(e.get('message'), str)
    bad = [(r.path, r.status, r.body[:80]) for r in error_sample(s) if not ok(r)]
    need(not bad, f'{bad[:3]}')


CODES = {400: {'INVALID_REQUEST'}, 401: {'UNAUTHORIZED'}, 404: {'KEY_NOT_FOUND'}, 405: {'METHOD_NOT_ALLOWED'},
         413: {'PAYLOAD_TOO_LARGE'}, 415: {'UNSUPPORTED_MEDIA_TYPE', 'INVALID_REQUEST'}, 422: {'DECRYPTION_FAILED'}}


@check('errors.code')
def c_err_code(s):
    bad = [(r.status, r.body[:80]) for r in error_sample(s)
           if r.status in CODES and ((r.json() or {}).get('error') or {}).get('code') not in CODES[r.status]]
    need(not bad, f'{bad[:3]}')


@check('errors.message')
def c_err_msg(s):
    def ok(r):
        m = ((r.json() or {}).get('error') or {}).get('message')
        return isinstance(m, str) and 1 <= len(m) <= 200 and not re.search(r'[\x00-\x1f\x7f]', m)
    bad = [(r.status, r.body[:120]) for r in error_sample(s) if not ok(r)]
    need(not bad, f'{bad[:3]}')


@check('errors.www_authenticate')
def c_www(s):
    a = s.auth(auth=s.basic(s='bad'))
    d = s.decrypt(tok='garbage')
    need(a.status == 401 and (a.h('WWW-Authenticate') or '').lower().startswith('basic'), f'auth {a.h("WWW-Authenticate")}')
    need(d.status == 401 and (d.h('WWW-Authenticate') or '').lower().startswith('bearer'), f'decrypt {d.h("WWW-Authenticate")}')


@check('errors.no_store')
def c_nostore(s):
    for r in (s.auth(), s.decrypt(), s.rotate()):
        need(r.status == 200 and 'no-store' in (r.h('Cache-Control') or ''), f'{r.path}: {r.h("Cache-Control")}')


def runs(secret, n=6):
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


@check('errors.no_secret')
def c_nosecret(s):
    leaks = []
    sec_runs = runs(SECRET) | runs(STATIC)
    for f in (SECRET + 'x', SECRET[:-1], SECRET.swapcase()):
        r = s.auth(auth=s.basic(s=f))
        txt = r.body.decode('latin-1') + ' '.join(v for _, v in r.headers)
        if any(x in txt for x in sec_runs):
            leaks.append(('secret', r.status))
    t = s.token(fresh=True)
    h, c, g = t.split('.')
    forged = f'{h}.{c}.{g[:-3]}abc'
    r = s.decrypt(tok=forged)
    txt = r.body.decode('latin-1') + ' '.join(v for _, v in r.headers)
    if any(x in txt for x in runs(g[:-3]) | runs(c)):
        leaks.append(('token', r.status))
    r = s.decrypt()
    key = base64.b64decode(s.pt)
    hdrs = ' '.join(v for _, v in r.headers).lower()
    if any(key[i:i + 4].hex() in hdrs for i in range(29)) or any(x in hdrs for x in runs(s.pt)):
        leaks.append(('key-in-header', r.status))
    need(not leaks, f'{leaks}')


@check('load.p50')
def c_p50(s):
    tok = s.token()
    def one(_):
        t0 = time.time()
        r = s.decrypt(tok=tok)
        return time.time() - t0, r.status
    with cf.ThreadPoolExecutor(8) as ex:
        res = list(ex.map(one, range(24)))
    lat = sorted(x for x, _ in res)
    need(lat[len(lat) // 2] < 0.25, f'p50 {lat[len(lat)//2]:.3f}s')


@check('load.errors')
def c_load_err(s):
    tok = s.token()
    with cf.ThreadPoolExecutor(8) as ex:
        res = list(ex.map(lambda _: s.decrypt(tok=tok), range(24)))
    need(all(r.status == 200 and pt_of(r) == s.pt for r in res), 'a load call failed')


@check('token.reuse', 'expiry')
def c_reuse(s):
    t0 = time.time()
    t = s.token(fresh=True)
    wait = s.expires - min(30, max(2, s.expires / 10))
    time.sleep(max(0, t0 + wait - time.time()))
    r = s.decrypt(tok=t)
    need(r.status == 200, f'at {wait}s: {r.status}')


@check('token.expired', 'expiry')
def c_expired(s):
    t0 = time.time()
    t = s.token(fresh=True)
    time.sleep(max(0, t0 + s.expires + 1.5 - time.time()))
    all_refused([('decrypt', s.decrypt(tok=t)), ('rotate', s.rotate(tok=t))], lambda r: r.status == 401, '401')


@check('token.renewed', 'expiry')
def c_renewed(s):
    t0 = time.time()
    t = s.token(fresh=True)
    time.sleep(max(0, t0 + s.expires + 1.5 - time.time()))
    t2 = s.token(fresh=True)
    r = s.decrypt(tok=t2)
    need(t2 != t and r.status == 200, f'same={t2 == t} status={r.status}')


# ------------------------------------------------------------------ runner
def run_check(name, defect=None, args=()):
    f, _ = CHECKS[name]
    s = Svc(defect, args)
    try:
        f(s)
        return True, ''
    except Fail as e:
        return False, str(e)[:300]
    except Exception as e:
        return False, f'{type(e).__name__}: {e}'[:300]
    finally:
        s.close()


def main():
    argv = sys.argv[1:]
    jobs = 3
    if argv[:1] == ['-j']:
        jobs = int(argv[1])
        argv = argv[2:]
    defects = json.load(open(os.path.join(HERE, 'defects.json')))
    for d in defects:
        assert d['checker_hint'] in CHECKS, d['name']
    tasks = []
    if not argv:
        for name, (f, mode) in CHECKS.items():
            args = {'plain': [], 'static': ['--static-key'], 'expiry': ['--expires-in', '10']}[mode]
            tasks.append(('baseline', name, None, args))
            if name in ('decrypt.basic_credentials', 'decrypt.no_token', 'decrypt.plaintext', 'rotate.roundtrip'):
                tasks.append(('baseline', name, None, ['--static-key']))
    for d in defects:
        if not argv or d['name'] in argv:
            tasks.append(('defect', d['checker_hint'], d['name'], d['service_args']))
    t0 = time.time()
    lock = threading.Lock()
    failures = []

    def go(t):
        kind, name, defect, args = t
        ok, why = run_check(name, defect, args)
        good = ok if kind == 'baseline' else not ok
        with lock:
            label = f'{kind:8} {defect or "-":30} {name:28} {" ".join(args)}'
            print(('ok   ' if good else 'FAIL ') + label + ('' if good or kind == 'defect' else '  ' + why)
                  + (f'  ({why[:90]})' if kind == 'defect' and good else ''), flush=True)
            if not good:
                failures.append(label)
    # the slow expiry checks first, so they overlap the rest
    tasks.sort(key=lambda t: 0 if t[1].startswith('token.') else 1)
    with cf.ThreadPoolExecutor(jobs) as ex:
        list(ex.map(go, tasks))
    print(f'{len(tasks) - len(failures)}/{len(tasks)} passed in {time.time() - t0:.1f}s')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
