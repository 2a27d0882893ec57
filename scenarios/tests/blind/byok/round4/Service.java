// A customer-hosted key service for partner `acme` (blind round 4), JDK 17 standard library only.
//
//   java Service.java --port 0 [--defect NAME] [--static-key] [--expires-in N]
//   java Service.java wrap --alias gold [--defect NAME]
//   java Service.java --list-defects
//
// Correct by default; each --defect switches on one mistake a real team could ship (see defects.json).
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.SecretKey;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;
import java.io.ByteArrayOutputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.nio.charset.StandardCharsets.UTF_8;

public class Service {
    // ---- fixed settings ------------------------------------------------------------------
    static final String PARTNER = "acme";
    static final String CLIENT_ID = "jv-client";
    static final String CLIENT_SECRET = "Jx9_tQ4mWz-Rk7vNp2Ls";
    static final String STATIC_KEY = "sk_jv_8Wq3Zt6Lm1Xp9Rv";
    static final String DEFAULT_ALIAS = "gold";
    static final String PREFIX = "byok:v1:";
    static final String ISSUER = "acme-byok";
    static final byte[] SEED = "jv-byok-round4/master-seed/v1".getBytes(UTF_8);
    static final int MAX_BODY = 16 * 1024;
    static final long SKEW_SECS = 300;
    static final int ENVELOPE_LEN = 5 + 12 + 32 + 16;

    static final List<String> DEFECTS = List.of(
            // /auth
            "auth_secret_prefix_compare", "auth_client_id_case_insensitive", "auth_bearer_token_accepted",
            "auth_form_credentials", "auth_malformed_basic_500", "auth_grant_type_first_wins",
            "auth_json_body_accepted", "auth_no_data_wrapper", "auth_opaque_token", "jwt_exp_millis",
            // bearer tokens
            "alg_none_blacklist", "signature_over_claims_only", "token_verdict_cache", "jwt_key_is_client_secret",
            "token_expiry_leeway", "token_min_remaining", "auth_returns_cached_token", "bearer_prefix_strip",
            "garbage_token_500", "basic_on_decrypt", "static_key_prefix_compare",
            // /decrypt-key
            "alias_case_insensitive", "shared_master_key", "prefix_case_insensitive", "prefix_optional",
            "any_version_prefix", "short_envelope_500", "header_not_authenticated", "tag_first_byte_unchecked",
            "tag_length_from_envelope", "trailing_bytes_ignored", "missing_alias_defaults", "body_cast_500",
            "json_content_type_prefix", "oversized_chunked", "plaintext_urlsafe",
            // /rotate-key and sealing
            "rotate_answers_default_alias", "rotate_seals_default_alias", "rotate_dek_16_bytes",
            "rotate_requires_body", "rotate_unknown_alias_creates", "counter_nonce", "seeded_dek",
            "key_id_from_key_bytes", "rotate_drops_old_master",
            // tracing headers
            "trace_echo_normalised", "trace_id_required", "timestamp_parse_500", "timestamp_future_accepted",
            // methods
            "auth_get_served", "rotate_put_served", "decrypt_405_no_allow",
            // errors and secrets
            "error_problem_json", "error_oauth_shape", "www_authenticate_bearer_everywhere", "no_store_auth_only",
            "leak_basic_echo", "leak_token_in_error", "leak_masked_secret", "leak_key_check_header",
            // load
            "pbkdf2_per_call");

    static String defect = null;
    static boolean staticKey = false;
    static long expiresIn = 3600;
    static String secretsLog = System.getenv("BLIND_SECRETS_LOG");

    static boolean d(String name) {
        return name.equals(defect);
    }

    // ---- key material ----------------------------------------------------------------------
    static final SecureRandom RNG = new SecureRandom();
    static final AtomicInteger NONCE_COUNTER = new AtomicInteger();
    static final Random SEEDED = new Random(0x5EEDL);
    static final byte[] JWT_KEY = new byte[32];

    static final class AliasState {
        int current = 1;
        int min = 1;
    }

    static final Map<String, AliasState> ALIASES = new ConcurrentHashMap<>();
    static final Map<String, SecretKey> MASTER_CACHE = new ConcurrentHashMap<>();
    static final Map<String, Long> OPAQUE_TOKENS = new ConcurrentHashMap<>();
    static final Map<String, Long> VERDICTS = new ConcurrentHashMap<>();
    static final Object TOKEN_CACHE_LOCK = new Object();
    static String cachedToken = null;
    static long cachedIssuedAtSecs = 0;

    static {
        ALIASES.put("gold", new AliasState());
        ALIASES.put("silver", new AliasState());
        RNG.nextBytes(JWT_KEY);
    }

    static byte[] hmac(byte[] key, byte[] msg) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key, "HmacSHA256"));
            return m.doFinal(msg);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    static SecretKey master(String alias, int version) {
        String a = d("shared_master_key") ? DEFAULT_ALIAS : alias;
        String id = a + "|v" + version;
        if (d("pbkdf2_per_call")) return derive(id);
        return MASTER_CACHE.computeIfAbsent(id,
                k -> new SecretKeySpec(hmac(SEED, ("master-key|" + k).getBytes(UTF_8)), "AES"));
    }

    static SecretKeyFactory kdf;

    // pbkdf2_per_call: the master key derived from a passphrase on every use, through one shared
    // (not thread-safe, hence synchronized) SecretKeyFactory.
    static synchronized SecretKey derive(String id) {
        try {
            if (kdf == null) kdf = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
            char[] pass = Base64.getEncoder().encodeToString(hmac(SEED, "passphrase".getBytes(UTF_8))).toCharArray();
            byte[] k = kdf.generateSecret(new PBEKeySpec(pass, id.getBytes(UTF_8), 200_000, 256)).getEncoded();
            return new SecretKeySpec(k, "AES");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] newNonce() {
        byte[] n = new byte[12];
        if (d("counter_nonce")) {
            ByteBuffer.wrap(n, 8, 4).putInt(NONCE_COUNTER.incrementAndGet());
            return n;
        }
        RNG.nextBytes(n);
        return n;
    }

    // A data key. Drawn until its standard base64 holds '+' or '/', so that the standard and the
    // URL-safe alphabets always differ for it (a test convenience; costs under two bits).
    static byte[] newDek(int len) {
        byte[] k = new byte[len];
        while (true) {
            if (d("seeded_dek")) {
                synchronized (SEEDED) {
                    SEEDED.nextBytes(k);
                }
            } else {
                RNG.nextBytes(k);
            }
            String b = b64(k);
            if (b.indexOf('+') >= 0 || b.indexOf('/') >= 0) return k;
        }
    }

    static byte[] header(int version) {
        byte[] h = new byte[5];
        h[0] = 1;
        ByteBuffer.wrap(h, 1, 4).putInt(version);
        return h;
    }

    static byte[] aad(String alias, byte[] header, byte[] kid) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.writeBytes(PREFIX.getBytes(UTF_8));
        if (!d("shared_master_key")) {
            o.writeBytes(alias.getBytes(UTF_8));
            o.write(0);
        }
        if (!d("header_not_authenticated")) o.writeBytes(header);
        if (kid != null) o.writeBytes(kid);
        return o.toByteArray();
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) o.writeBytes(p);
        return o.toByteArray();
    }

    // byok:v1 envelope: version byte 0x01 | key version (uint32 BE) | nonce (12) | AES-256-GCM(dek) | tag (16)
    // AAD: "byok:v1:" | alias | 0x00 | the 5 header bytes.
    static byte[] seal(String alias, int version, byte[] dek) throws GeneralSecurityException {
        byte[] h = header(version);
        byte[] nonce = newNonce();
        byte[] kid = d("key_id_from_key_bytes") ? Arrays.copyOf(dek, 8) : null;
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.ENCRYPT_MODE, master(alias, version), new GCMParameterSpec(128, nonce));
        c.updateAAD(aad(alias, h, kid));
        byte[] ct = c.doFinal(dek);
        return concat(h, nonce, ct, kid == null ? new byte[0] : kid);
    }

    static SecretKey versionKey(String alias, int kv) throws Refusal {
        AliasState st = ALIASES.get(alias);
        if (st == null) throw failed();
        synchronized (st) {
            if (kv < st.min || kv > st.current) throw failed();
        }
        return master(alias, kv);
    }

    static byte[] open(String alias, byte[] env) throws Refusal, GeneralSecurityException {
        int kidLen = d("key_id_from_key_bytes") ? 8 : 0;
        int full = ENVELOPE_LEN + kidLen;
        if (d("short_envelope_500")) {
            // no length check: the parts are read straight off the buffer
        } else if (d("trailing_bytes_ignored")) {
            if (env.length < full) throw bad("encrypted_key is not a byok:v1 envelope of the expected length");
            env = Arrays.copyOf(env, full);
        } else if (d("tag_length_from_envelope")) {
            if (env.length < 5 + 12 + 32 + 12) throw bad("encrypted_key is too short for a byok:v1 envelope");
        } else if (d("rotate_dek_16_bytes")) {
            if (env.length != full && env.length != full - 16)
                throw bad("encrypted_key is not a byok:v1 envelope of the expected length");
        } else if (env.length != full) {
            throw bad("encrypted_key is not a byok:v1 envelope of the expected length");
        }
        ByteBuffer bb = ByteBuffer.wrap(env);
        byte ver = bb.get();
        int kv = bb.getInt();
        byte[] nonce = new byte[12];
        bb.get(nonce);
        byte[] rest = new byte[bb.remaining()];
        bb.get(rest);
        byte[] kid = null;
        if (kidLen > 0) {
            kid = Arrays.copyOfRange(rest, rest.length - kidLen, rest.length);
            rest = Arrays.copyOf(rest, rest.length - kidLen);
        }
        if (ver != 1 && !d("header_not_authenticated")) throw failed();
        SecretKey mk = versionKey(alias, kv);
        byte[] aad = aad(alias, Arrays.copyOfRange(env, 0, 5), kid);
        if (d("tag_first_byte_unchecked")) return openByHand(mk, nonce, rest, aad);
        int tagBits = 128;
        if (d("tag_length_from_envelope")) tagBits = (rest.length - 32) * 8;
        try {
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, mk, new GCMParameterSpec(tagBits, nonce));
            c.updateAAD(aad);
            return c.doFinal(rest);
        } catch (AEADBadTagException | java.security.InvalidAlgorithmParameterException e) {
            throw failed();
        }
    }

    // AES-GCM opened "by hand": CTR for the text, the tag recomputed and compared in a loop.
    static byte[] openByHand(SecretKey mk, byte[] nonce, byte[] rest, byte[] aad)
            throws GeneralSecurityException, Refusal {
        if (rest.length < 16) throw failed();
        byte[] ct = Arrays.copyOf(rest, rest.length - 16);
        byte[] tag = Arrays.copyOfRange(rest, rest.length - 16, rest.length);
        byte[] iv = new byte[16];
        System.arraycopy(nonce, 0, iv, 0, 12);
        iv[15] = 2;
        Cipher ctr = Cipher.getInstance("AES/CTR/NoPadding");
        ctr.init(Cipher.DECRYPT_MODE, mk, new IvParameterSpec(iv));
        byte[] pt = ctr.doFinal(ct);
        Cipher g = Cipher.getInstance("AES/GCM/NoPadding");
        g.init(Cipher.ENCRYPT_MODE, mk, new GCMParameterSpec(128, nonce));
        g.updateAAD(aad);
        byte[] expect = g.doFinal(pt);
        int diff = 0;
        for (int i = 1; i < 16; i++) diff |= (expect[ct.length + i] ^ tag[i]);
        if (diff != 0) throw failed();
        return pt;
    }

    static int rotationVersion(String alias) {
        AliasState st = ALIASES.get(alias);
        synchronized (st) {
            if (d("rotate_drops_old_master")) {
                st.current++;
                st.min = st.current;
            }
            return st.current;
        }
    }

    // ---- encodings ---------------------------------------------------------------------------
    static String b64(byte[] b) {
        return Base64.getEncoder().encodeToString(b);
    }

    static String b64url(byte[] b) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    static final Pattern STRICT_B64 = Pattern.compile("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$");
    static final Pattern B64URL = Pattern.compile("^[A-Za-z0-9_-]*$");
    static final Pattern UUID_RE = Pattern.compile(
            "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");

    static byte[] b64urlStrict(String s) {
        if (!B64URL.matcher(s).matches() || s.length() % 4 == 1) throw new IllegalArgumentException("not base64url");
        return Base64.getUrlDecoder().decode(s);
    }

    static String strictUtf8(byte[] b) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(b)).toString();
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    static boolean constEq(String a, String b) {
        return MessageDigest.isEqual(a.getBytes(UTF_8), b.getBytes(UTF_8));
    }

    // ---- errors --------------------------------------------------------------------------------
    static final class Refusal extends Exception {
        final int status;
        final String code;
        Refusal(int status, String code, String message) {
            super(message, null, false, false);
            this.status = status;
            this.code = code;
        }
    }

    static Refusal bad(String m) {
        return new Refusal(400, "INVALID_REQUEST", m);
    }

    static Refusal failed() {
        return new Refusal(422, "DECRYPTION_FAILED",
                "the encrypted key does not decrypt under this key alias (another alias, a retired master-key version, or damaged)");
    }

    static Refusal unauthorized(String m) {
        return new Refusal(401, "UNAUTHORIZED", m);
    }

    static Refusal unsupported(String m) {
        return new Refusal(415, "UNSUPPORTED_MEDIA_TYPE", m);
    }

    static Refusal tooLarge() {
        return new Refusal(413, "PAYLOAD_TOO_LARGE", "the request body is larger than 16384 bytes");
    }

    static Refusal notFoundAlias() {
        return new Refusal(404, "KEY_NOT_FOUND", "no master key has this key_alias");
    }

    // ---- JSON ----------------------------------------------------------------------------------
    static final class Json {
        static final class Error extends Exception {
            Error(String m) {
                super(m, null, false, false);
            }
        }

        final String s;
        int i = 0;
        int depth = 0;

        Json(String s) {
            this.s = s;
        }

        static Object parse(byte[] b) throws Error {
            String text;
            try {
                text = strictUtf8(b);
            } catch (CharacterCodingException e) {
                throw new Error("not UTF-8");
            }
            Json p = new Json(text);
            p.ws();
            Object v = p.value();
            p.ws();
            if (p.i != p.s.length()) throw new Error("trailing text");
            return v;
        }

        void ws() {
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') i++;
                else break;
            }
        }

        Object value() throws Error {
            if (i >= s.length()) throw new Error("unexpected end");
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw new Error("unexpected character");
            }
        }

        Object literal(String w, Object v) throws Error {
            if (!s.startsWith(w, i)) throw new Error("bad literal");
            i += w.length();
            return v;
        }

        Map<String, Object> object() throws Error {
            if (++depth > 64) throw new Error("too deep");
            i++;
            Map<String, Object> m = new LinkedHashMap<>();
            ws();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                depth--;
                return m;
            }
            while (true) {
                ws();
                if (i >= s.length() || s.charAt(i) != '"') throw new Error("expected a key");
                String k = string();
                if (m.containsKey(k)) throw new Error("duplicate key");
                ws();
                if (i >= s.length() || s.charAt(i) != ':') throw new Error("expected ':'");
                i++;
                ws();
                m.put(k, value());
                ws();
                if (i >= s.length()) throw new Error("unexpected end");
                char c = s.charAt(i++);
                if (c == ',') continue;
                if (c == '}') break;
                throw new Error("expected ',' or '}'");
            }
            depth--;
            return m;
        }

        List<Object> array() throws Error {
            if (++depth > 64) throw new Error("too deep");
            i++;
            List<Object> l = new ArrayList<>();
            ws();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                depth--;
                return l;
            }
            while (true) {
                ws();
                l.add(value());
                ws();
                if (i >= s.length()) throw new Error("unexpected end");
                char c = s.charAt(i++);
                if (c == ',') continue;
                if (c == ']') break;
                throw new Error("expected ',' or ']'");
            }
            depth--;
            return l;
        }

        String string() throws Error {
            i++;
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (i >= s.length()) throw new Error("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') break;
                if (c < 0x20) throw new Error("control character in string");
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) throw new Error("bad escape");
                char e = s.charAt(i++);
                switch (e) {
                    case '"': sb.append('"'); break;
                    case '\\': sb.append('\\'); break;
                    case '/': sb.append('/'); break;
                    case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'n': sb.append('\n'); break;
                    case 'r': sb.append('\r'); break;
                    case 't': sb.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) throw new Error("bad escape");
                        try {
                            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw new Error("bad escape");
                        }
                        i += 4;
                        break;
                    default:
                        throw new Error("bad escape");
                }
            }
            return sb.toString();
        }

        static final Pattern NUM = Pattern.compile("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");

        Object number() throws Error {
            Matcher m = NUM.matcher(s);
            m.region(i, s.length());
            if (!m.lookingAt()) throw new Error("bad number");
            String t = m.group();
            i = m.end();
            if (t.length() > 10_000) throw new Error("number too long");
            try {
                if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0 && t.length() < 19)
                    return Long.parseLong(t);
                return new BigDecimal(t);
            } catch (NumberFormatException | ArithmeticException x) {
                throw new Error("bad number");
            }
        }

        static String write(Object v) {
            StringBuilder sb = new StringBuilder();
            write(sb, v);
            return sb.toString();
        }

        @SuppressWarnings("unchecked")
        static void write(StringBuilder sb, Object v) {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String) {
                sb.append('"');
                for (char c : ((String) v).toCharArray()) {
                    switch (c) {
                        case '"': sb.append("\\\""); break;
                        case '\\': sb.append("\\\\"); break;
                        case '\n': sb.append("\\n"); break;
                        case '\r': sb.append("\\r"); break;
                        case '\t': sb.append("\\t"); break;
                        default:
                            if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                            else sb.append(c);
                    }
                }
                sb.append('"');
            } else if (v instanceof Map) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                    if (!first) sb.append(", ");
                    first = false;
                    write(sb, e.getKey());
                    sb.append(": ");
                    write(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof List) {
                sb.append('[');
                boolean first = true;
                for (Object o : (List<Object>) v) {
                    if (!first) sb.append(", ");
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            } else {
                sb.append(v.toString());
            }
        }
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    // ---- tokens --------------------------------------------------------------------------------
    static byte[] jwtKey() {
        return d("jwt_key_is_client_secret") ? CLIENT_SECRET.getBytes(UTF_8) : JWT_KEY;
    }

    static String issueToken() {
        long now = System.currentTimeMillis() / 1000;
        if (d("auth_opaque_token")) {
            byte[] r = new byte[32];
            RNG.nextBytes(r);
            String t = b64url(r);
            OPAQUE_TOKENS.put(t, (now + expiresIn) * 1000);
            return t;
        }
        long exp = d("jwt_exp_millis") ? (now + expiresIn) * 1000 : now + expiresIn;
        String h = b64url(Json.write(obj("alg", "HS256", "typ", "JWT")).getBytes(UTF_8));
        String p = b64url(Json.write(obj("iss", ISSUER, "sub", CLIENT_ID, "aud", ISSUER, "iat", now, "exp", exp,
                "jti", UUID.randomUUID().toString())).getBytes(UTF_8));
        String input = d("signature_over_claims_only") ? p : h + "." + p;
        return h + "." + p + "." + b64url(hmac(jwtKey(), input.getBytes(UTF_8)));
    }

    static boolean validToken(String token) {
        if (d("garbage_token_500")) return verifyUnguarded(token);
        try {
            return verify(token);
        } catch (RuntimeException | Json.Error e) {
            return false;
        }
    }

    @SuppressWarnings("unchecked")
    static boolean verify(String token) throws Json.Error {
        long nowMs = System.currentTimeMillis();
        if (d("auth_opaque_token")) {
            Long exp = OPAQUE_TOKENS.get(token);
            return exp != null && nowMs < exp;
        }
        String[] p = token.split("\\.", -1);
        if (p.length != 3) return false;
        if (d("token_verdict_cache")) {
            Long exp = VERDICTS.get(p[2]);
            if (exp != null) return nowMs < exp * 1000;
        }
        Object header = Json.parse(b64urlStrict(p[0]));
        Object claims = Json.parse(b64urlStrict(p[1]));
        byte[] sig = b64urlStrict(p[2]);
        if (!(header instanceof Map) || !(claims instanceof Map)) return false;
        Object alg = ((Map<String, Object>) header).get("alg");
        if (d("alg_none_blacklist")) {
            if ("none".equals(alg)) return false;
            if ("HS256".equals(alg) && !sigOk(p[0] + "." + p[1], sig)) return false;
            // any other algorithm: "not ours to verify", let through
        } else if (d("signature_over_claims_only")) {
            if (!sigOk(p[1], sig)) return false;
        } else {
            if (!"HS256".equals(alg)) return false;
            if (!sigOk(p[0] + "." + p[1], sig)) return false;
        }
        return claimsOk((Map<String, Object>) claims, p[2], nowMs);
    }

    static boolean sigOk(String input, byte[] sig) {
        return MessageDigest.isEqual(hmac(jwtKey(), input.getBytes(UTF_8)), sig);
    }

    static boolean claimsOk(Map<String, Object> c, String sigPart, long nowMs) {
        if (!ISSUER.equals(c.get("iss")) || !ISSUER.equals(c.get("aud")) || !CLIENT_ID.equals(c.get("sub")))
            return false;
        Object e = c.get("exp");
        if (!(e instanceof Long)) return false;
        long exp = (Long) e;
        long expMs = d("jwt_exp_millis") ? exp : exp * 1000;
        long leeway = d("token_expiry_leeway") ? 120_000 : 0;
        if (nowMs >= expMs + leeway) return false;
        if (d("token_min_remaining") && expMs - nowMs < 3000) return false;
        if (d("token_verdict_cache")) VERDICTS.put(sigPart, exp);
        return true;
    }

    // garbage_token_500: the header and claims are decoded and parsed without a guard.
    @SuppressWarnings("unchecked")
    static boolean verifyUnguarded(String token) {
        String[] p = token.split("\\.", -1);
        if (p.length != 3) return false;
        Map<String, Object> header;
        Map<String, Object> claims;
        try {
            header = (Map<String, Object>) Json.parse(Base64.getUrlDecoder().decode(p[0]));
            claims = (Map<String, Object>) Json.parse(Base64.getUrlDecoder().decode(p[1]));
        } catch (Json.Error e) {
            throw new IllegalStateException("token parse error: " + e.getMessage());
        }
        if (!"HS256".equals(header.get("alg"))) return false;
        byte[] sig;
        try {
            sig = b64urlStrict(p[2]);
        } catch (IllegalArgumentException e) {
            return false;
        }
        if (!sigOk(p[0] + "." + p[1], sig)) return false;
        return claimsOk(claims, p[2], System.currentTimeMillis());
    }

    static boolean staticKeyOk(String t) {
        if (!staticKey) return false;
        if (d("static_key_prefix_compare")) {
            if (t.isEmpty() || t.length() > STATIC_KEY.length()) return false;
            int diff = 0;
            for (int i = 0; i < t.length(); i++) diff |= t.charAt(i) ^ STATIC_KEY.charAt(i);
            return diff == 0;
        }
        return constEq(t, STATIC_KEY);
    }

    static void logSecret(String s) {
        if (secretsLog == null || secretsLog.isEmpty()) return;
        synchronized (Service.class) {
            try (FileWriter w = new FileWriter(secretsLog, true)) {
                w.write(s + "\n");
            } catch (IOException e) {
                // instrumentation only
            }
        }
    }

    // ---- one exchange ----------------------------------------------------------------------------
    static final class Ctx {
        final HttpExchange ex;
        final long t0 = System.nanoTime();
        final String endpoint;
        final boolean head;
        String traceOut;

        Ctx(HttpExchange ex, String endpoint) {
            this.ex = ex;
            this.endpoint = endpoint;
            this.head = ex.getRequestMethod().equals("HEAD");
            String tid = header("x-trace-id");
            if (tid == null) {
                traceOut = UUID.randomUUID().toString();
            } else if (d("trace_echo_normalised") && UUID_RE.matcher(tid).matches()) {
                traceOut = UUID.fromString(tid).toString();
            } else if (tid.length() <= 200 && tid.chars().allMatch(ch -> ch >= 0x20 && ch < 0x7f)) {
                traceOut = tid;
            } else {
                traceOut = UUID.randomUUID().toString();
            }
        }

        String header(String n) {
            return ex.getRequestHeaders().getFirst(n);
        }

        byte[] readBody() throws Refusal {
            boolean limit = !d("oversized_chunked");
            try (InputStream in = ex.getRequestBody()) {
                ByteArrayOutputStream o = new ByteArrayOutputStream();
                byte[] buf = new byte[8192];
                long total = 0;
                int n;
                while ((n = in.read(buf)) > 0) {
                    total += n;
                    if (limit && total > MAX_BODY) throw tooLarge();
                    o.write(buf, 0, n);
                }
                return o.toByteArray();
            } catch (IOException e) {
                throw bad("the request body could not be read");
            }
        }

        void send(int status, String body, String ctype, boolean secretBody) throws IOException {
            Headers h = ex.getResponseHeaders();
            h.set("X-Trace-Id", traceOut);
            h.set("X-Request-Duration", String.format(Locale.ROOT, "%.3f", (System.nanoTime() - t0) / 1e6));
            h.set("Content-Type", ctype);
            if (!d("no_store_auth_only") || (secretBody && endpoint.equals("auth"))) {
                h.set("Cache-Control", "no-store");
                h.set("Pragma", "no-cache");
            }
            byte[] b = body.getBytes(UTF_8);
            if (head) {
                ex.sendResponseHeaders(status, -1);
            } else {
                ex.sendResponseHeaders(status, b.length);
                try (OutputStream os = ex.getResponseBody()) {
                    os.write(b);
                }
            }
        }

        void ok(Map<String, Object> body) throws IOException {
            send(200, Json.write(body), "application/json", true);
        }

        void error(Refusal r, boolean allow) throws IOException {
            Headers h = ex.getResponseHeaders();
            if (r.status == 401) {
                boolean basic = endpoint.equals("auth") && !d("www_authenticate_bearer_everywhere");
                h.set("WWW-Authenticate", basic ? "Basic realm=\"acme-byok\", charset=\"UTF-8\"" : "Bearer realm=\"acme-byok\"");
            }
            if (allow) h.set("Allow", "POST");
            String body;
            if (d("error_oauth_shape") && r.status == 401) {
                body = Json.write(obj("error", endpoint.equals("auth") ? "invalid_client" : "invalid_token",
                        "error_description", r.getMessage()));
            } else {
                body = Json.write(obj("error", obj("code", r.code, "message", r.getMessage())));
            }
            send(r.status, body, d("error_problem_json") ? "application/problem+json" : "application/json", false);
        }
    }

    static String mediaType(String ct) {
        if (ct == null) return null;
        return ct.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    }

    static void requireJson(Ctx c) throws Refusal {
        String ct = c.header("Content-Type");
        if (d("json_content_type_prefix")) {
            if (ct != null && ct.toLowerCase(Locale.ROOT).startsWith("application/json")) return;
        } else if ("application/json".equals(mediaType(ct))) {
            return;
        }
        throw unsupported("the body must be application/json");
    }

    static void tracing(Ctx c) throws Refusal {
        String rid = c.header("x-request-id");
        if (rid == null) throw bad("the x-request-id header is required");
        if (!UUID_RE.matcher(rid).matches()) throw bad("x-request-id must be a UUID");
        String ts = c.header("x-request-timestamp");
        if (ts == null) throw bad("the x-request-timestamp header is required");
        Instant t;
        if (d("timestamp_parse_500")) {
            t = OffsetDateTime.parse(ts.trim()).toInstant();
        } else {
            try {
                t = OffsetDateTime.parse(ts.trim()).toInstant();
            } catch (DateTimeParseException e) {
                throw bad("x-request-timestamp must be an ISO 8601 date-time with an offset");
            }
        }
        long age = Duration.between(t, Instant.now()).getSeconds();
        if (d("timestamp_future_accepted")) {
            if (age > SKEW_SECS) throw bad("x-request-timestamp is more than 5 minutes old");
        } else if (age > SKEW_SECS || age < -SKEW_SECS) {
            throw bad("x-request-timestamp is more than 5 minutes away from the service's clock");
        }
        String tid = c.header("x-trace-id");
        if (tid == null) {
            if (d("trace_id_required")) throw bad("the x-trace-id header is required");
        } else if (!UUID_RE.matcher(tid).matches()) {
            throw bad("x-trace-id must be a UUID");
        }
    }

    // ---- /auth ------------------------------------------------------------------------------------
    static Map<String, List<String>> parseForm(byte[] body) throws Refusal {
        String text;
        try {
            text = strictUtf8(body);
        } catch (CharacterCodingException e) {
            throw bad("the form is not UTF-8");
        }
        Map<String, List<String>> m = new LinkedHashMap<>();
        if (text.isEmpty()) return m;
        for (String part : text.split("&", -1)) {
            if (part.isEmpty()) continue;
            int eq = part.indexOf('=');
            String k = eq < 0 ? part : part.substring(0, eq);
            String v = eq < 0 ? "" : part.substring(eq + 1);
            try {
                m.computeIfAbsent(URLDecoder.decode(k, UTF_8), x -> new ArrayList<>()).add(URLDecoder.decode(v, UTF_8));
            } catch (IllegalArgumentException e) {
                throw bad("the form is not valid application/x-www-form-urlencoded");
            }
        }
        return m;
    }

    static String first(Map<String, List<String>> form, String k) {
        List<String> l = form.get(k);
        return l == null || l.isEmpty() ? null : l.get(0);
    }

    static boolean prefixEq(String sent, String real) {
        if (sent.length() > real.length()) return false;
        int diff = 0;
        for (int i = 0; i < sent.length(); i++) diff |= sent.charAt(i) ^ real.charAt(i);
        return diff == 0;
    }

    static void checkBasic(String authz) throws Refusal {
        if (authz == null || authz.isBlank()) throw unauthorized("client authentication is required (HTTP Basic)");
        int sp = authz.indexOf(' ');
        String scheme = sp < 0 ? authz : authz.substring(0, sp);
        if (!scheme.equalsIgnoreCase("Basic")) throw unauthorized("use HTTP Basic client authentication on /auth");
        String v = sp < 0 ? "" : authz.substring(sp + 1).trim();
        String id;
        String secret;
        String decoded;
        if (d("auth_malformed_basic_500")) {
            decoded = new String(Base64.getDecoder().decode(v), UTF_8);
            String[] parts = decoded.split(":", 2);
            id = parts[0];
            secret = parts[1];
        } else {
            if (v.isEmpty()) throw unauthorized("malformed Basic credentials");
            try {
                decoded = strictUtf8(Base64.getDecoder().decode(v));
            } catch (IllegalArgumentException | CharacterCodingException e) {
                throw unauthorized("malformed Basic credentials");
            }
            int colon = decoded.indexOf(':');
            if (colon < 0) throw unauthorized("malformed Basic credentials");
            id = decoded.substring(0, colon);
            secret = decoded.substring(colon + 1);
        }
        boolean idOk = d("auth_client_id_case_insensitive") ? id.equalsIgnoreCase(CLIENT_ID) : constEq(id, CLIENT_ID);
        boolean secretOk = d("auth_secret_prefix_compare") ? prefixEq(secret, CLIENT_SECRET) : constEq(secret, CLIENT_SECRET);
        if (idOk & secretOk) return;
        if (d("leak_basic_echo"))
            throw unauthorized("invalid client credentials '" + decoded.replaceAll("\\p{Cntrl}", "?") + "'");
        if (d("leak_masked_secret") && idOk)
            throw unauthorized("invalid client secret for " + CLIENT_ID + " (expected "
                    + CLIENT_SECRET.substring(0, 4) + "************" + CLIENT_SECRET.substring(CLIENT_SECRET.length() - 4) + ")");
        throw unauthorized("invalid client credentials");
    }

    static boolean basicMatches(String authz) {
        try {
            String v = authz.substring(authz.indexOf(' ') + 1).trim();
            String s = strictUtf8(Base64.getDecoder().decode(v));
            return constEq(s, CLIENT_ID + ":" + CLIENT_SECRET);
        } catch (RuntimeException | CharacterCodingException e) {
            return false;
        }
    }

    static void handleAuth(Ctx c) throws Exception {
        tracing(c);
        String authz = c.header("Authorization");
        byte[] body = null;
        if (authz == null && d("auth_form_credentials")) {
            body = c.readBody();
            Map<String, List<String>> f = parseForm(body);
            String id = first(f, "client_id");
            String secret = first(f, "client_secret");
            if (id == null || secret == null || !constEq(id, CLIENT_ID) || !constEq(secret, CLIENT_SECRET))
                throw unauthorized("client authentication is required (HTTP Basic)");
        } else if (authz != null && d("auth_bearer_token_accepted") && authz.regionMatches(true, 0, "Bearer ", 0, 7)) {
            if (!validToken(authz.substring(7).trim())) throw unauthorized("invalid client credentials");
        } else {
            checkBasic(authz);
        }
        if (body == null) body = c.readBody();
        String mt = mediaType(c.header("Content-Type"));
        Map<String, List<String>> form;
        if (d("auth_json_body_accepted") && "application/json".equals(mt)) {
            form = new LinkedHashMap<>();
            try {
                Object j = Json.parse(body);
                if (j instanceof Map) {
                    Object g = ((Map<?, ?>) j).get("grant_type");
                    if (g instanceof String) form.put("grant_type", List.of((String) g));
                }
            } catch (Json.Error e) {
                throw bad("the body is not valid JSON");
            }
        } else if ("application/x-www-form-urlencoded".equals(mt)) {
            form = parseForm(body);
        } else {
            throw unsupported("the /auth body must be application/x-www-form-urlencoded");
        }
        List<String> gt = form.get("grant_type");
        if (gt == null || gt.isEmpty()) throw bad("grant_type is required");
        if (gt.size() != 1 && !d("auth_grant_type_first_wins")) throw bad("grant_type must be given once");
        if (!"client_credentials".equals(gt.get(0))) throw bad("grant_type must be client_credentials");

        String token;
        if (d("auth_returns_cached_token")) {
            synchronized (TOKEN_CACHE_LOCK) {
                long nowSecs = System.currentTimeMillis() / 1000;
                if (cachedToken == null || cachedIssuedAtSecs + expiresIn * 1000L <= nowSecs) {
                    cachedToken = issueToken();
                    cachedIssuedAtSecs = nowSecs;
                }
                token = cachedToken;
            }
        } else {
            token = issueToken();
        }
        logSecret(token);
        Map<String, Object> data = obj("access_token", token, "token_type", "Bearer", "expires_in", expiresIn);
        c.ok(d("auth_no_data_wrapper") ? data : obj("data", data));
    }

    // ---- bearer endpoints -------------------------------------------------------------------------
    static void requireBearer(Ctx c, String endpoint) throws Refusal {
        String authz = c.header("Authorization");
        if (d("basic_on_decrypt") && endpoint.equals("decrypt") && authz != null
                && authz.regionMatches(true, 0, "Basic ", 0, 6) && basicMatches(authz)) return;
        String token;
        if (d("bearer_prefix_strip")) {
            if (authz == null) throw unauthorized("a bearer token is required");
            token = authz.replace("Bearer ", "").trim();
        } else {
            if (authz == null || authz.isBlank()) throw unauthorized("a bearer token is required");
            int sp = authz.indexOf(' ');
            if (sp <= 0 || !authz.substring(0, sp).equalsIgnoreCase("Bearer"))
                throw unauthorized("use Authorization: Bearer <token>");
            token = authz.substring(sp + 1).trim();
        }
        if (token.isEmpty()) throw unauthorized("a bearer token is required");
        if (staticKeyOk(token)) return;
        if (validToken(token)) return;
        if (d("leak_token_in_error") && token.length() > 12)
            throw unauthorized("the bearer token ..." + token.substring(token.length() - 12) + " is invalid or expired");
        throw unauthorized("the bearer token is invalid or expired");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> dataObject(byte[] body, boolean decrypt) throws Refusal {
        Object root;
        try {
            root = Json.parse(body);
        } catch (Json.Error e) {
            throw bad("the body is not valid JSON");
        }
        if (d("body_cast_500") && decrypt) {
            Map<String, Object> m = (Map<String, Object>) root;
            if (!m.containsKey("data")) throw bad("missing field: data");
            Map<String, Object> data = (Map<String, Object>) m.get("data");
            data.size();
            return data;
        }
        if (!(root instanceof Map)) throw bad("the body must be a JSON object");
        Map<String, Object> m = (Map<String, Object>) root;
        if (!m.containsKey("data")) throw bad("missing field: data");
        if (!(m.get("data") instanceof Map)) throw bad("data must be a JSON object");
        return (Map<String, Object>) m.get("data");
    }

    static String stringField(Map<String, Object> data, String name, boolean decrypt) throws Refusal {
        if (!data.containsKey(name)) throw bad("missing field: data." + name);
        if (d("body_cast_500") && decrypt) {
            String s = (String) data.get(name);
            s.length();
            return s;
        }
        Object v = data.get(name);
        if (!(v instanceof String)) throw bad("data." + name + " must be a string");
        return (String) v;
    }

    static String resolveAlias(String alias) throws Refusal {
        String a = d("alias_case_insensitive") ? alias.toLowerCase(Locale.ROOT) : alias;
        if (!ALIASES.containsKey(a)) throw notFoundAlias();
        return a;
    }

    static final Pattern ANY_VERSION = Pattern.compile("^byok:v[0-9]+:");

    static byte[] parseEnvelope(String ek) throws Refusal {
        String rest;
        if (d("prefix_case_insensitive")) {
            if (!ek.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) throw bad("encrypted_key must start with byok:v1:");
            rest = ek.substring(PREFIX.length());
        } else if (d("any_version_prefix")) {
            Matcher m = ANY_VERSION.matcher(ek);
            if (!m.find()) throw bad("encrypted_key must start with byok:v1:");
            rest = ek.substring(m.end());
        } else if (d("prefix_optional")) {
            rest = ek.startsWith(PREFIX) ? ek.substring(PREFIX.length()) : ek;
        } else {
            if (!ek.startsWith(PREFIX)) throw bad("encrypted_key must start with byok:v1:");
            rest = ek.substring(PREFIX.length());
        }
        if (!STRICT_B64.matcher(rest).matches()) throw bad("encrypted_key is not standard base64 after byok:v1:");
        try {
            return Base64.getDecoder().decode(rest);
        } catch (IllegalArgumentException e) {
            throw bad("encrypted_key is not standard base64 after byok:v1:");
        }
    }

    static void handleDecrypt(Ctx c) throws Exception {
        tracing(c);
        requireBearer(c, "decrypt");
        byte[] body = c.readBody();
        requireJson(c);
        Map<String, Object> data = dataObject(body, true);
        String alias;
        if (d("missing_alias_defaults") && !data.containsKey("key_alias")) alias = DEFAULT_ALIAS;
        else alias = stringField(data, "key_alias", true);
        String ek = stringField(data, "encrypted_key", true);
        alias = resolveAlias(alias);
        byte[] env = parseEnvelope(ek);
        byte[] dek = open(alias, env);
        logSecret(b64(dek));
        if (d("leak_key_check_header")) c.ex.getResponseHeaders().set("X-Key-Check", hex(Arrays.copyOf(dek, 4)));
        String text = d("plaintext_urlsafe") ? Base64.getUrlEncoder().encodeToString(dek) : b64(dek);
        c.ok(obj("data", obj("plaintext_key", text)));
    }

    static void handleRotate(Ctx c) throws Exception {
        tracing(c);
        requireBearer(c, "rotate");
        byte[] body = c.readBody();
        String alias;
        if (body.length == 0 && !d("rotate_requires_body")) {
            alias = DEFAULT_ALIAS;
        } else {
            if (body.length == 0) throw bad("a body {\"data\": {\"key_alias\": ...}} is required");
            requireJson(c);
            alias = stringField(dataObject(body, false), "key_alias", false);
        }
        if (d("rotate_unknown_alias_creates") && !ALIASES.containsKey(alias)) ALIASES.putIfAbsent(alias, new AliasState());
        alias = resolveAlias(alias);
        int version = rotationVersion(alias);
        byte[] dek = newDek(d("rotate_dek_16_bytes") ? 16 : 32);
        byte[] env = seal(d("rotate_seals_default_alias") ? DEFAULT_ALIAS : alias, version, dek);
        logSecret(b64(dek));
        c.ok(obj("data", obj("encrypted_dek", PREFIX + b64(env),
                "key_alias", d("rotate_answers_default_alias") ? DEFAULT_ALIAS : alias,
                "plaintext_dek", b64(dek))));
    }

    // ---- dispatch -----------------------------------------------------------------------------------
    static void handle(HttpExchange ex) {
        String path = ex.getRequestURI().getRawPath();
        String base = "/" + PARTNER + "/byok/v1/";
        String endpoint = null;
        if (path.equals(base + "auth")) endpoint = "auth";
        else if (path.equals(base + "decrypt-key")) endpoint = "decrypt";
        else if (path.equals(base + "rotate-key")) endpoint = "rotate";
        Ctx c = new Ctx(ex, endpoint == null ? "none" : endpoint);
        try {
            try {
                route(c, endpoint, ex.getRequestMethod());
            } catch (Refusal r) {
                boolean allow = r.status == 405 && !(d("decrypt_405_no_allow") && "decrypt".equals(endpoint));
                c.error(r, allow);
            } catch (Throwable t) {
                c.error(new Refusal(500, "INTERNAL_ERROR", "internal error"), false);
            }
        } catch (Throwable t) {
            // the answer could not be written (the client went away)
        } finally {
            ex.close();
        }
    }

    static void route(Ctx c, String endpoint, String method) throws Exception {
        if (endpoint == null) throw new Refusal(404, "NOT_FOUND", "no such endpoint");
        boolean post = method.equals("POST")
                || (d("auth_get_served") && endpoint.equals("auth") && method.equals("GET"))
                || (d("rotate_put_served") && endpoint.equals("rotate") && method.equals("PUT"));
        if (!post) throw new Refusal(405, "METHOD_NOT_ALLOWED", "only POST is allowed here");
        String cl = c.header("Content-Length");
        if (cl != null) {
            long n;
            try {
                n = Long.parseLong(cl.trim());
            } catch (NumberFormatException e) {
                throw bad("bad Content-Length");
            }
            if (n > MAX_BODY) throw tooLarge();
        }
        switch (endpoint) {
            case "auth": handleAuth(c); break;
            case "decrypt": handleDecrypt(c); break;
            default: handleRotate(c); break;
        }
    }

    // ---- command line ---------------------------------------------------------------------------------
    static void usage(String m) {
        System.err.println("Service.java: " + m);
        System.exit(2);
    }

    static void setDefect(String name) {
        if (!DEFECTS.contains(name)) usage("unknown defect: " + name);
        defect = name;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--list-defects")) {
            for (String n : DEFECTS) System.out.println(n);
            return;
        }
        if (args.length > 0 && args[0].equals("wrap")) {
            String alias = DEFAULT_ALIAS;
            for (int i = 1; i < args.length; i++) {
                if (args[i].equals("--alias") && i + 1 < args.length) alias = args[++i];
                else if (args[i].equals("--defect") && i + 1 < args.length) setDefect(args[++i]);
                else usage("unknown argument: " + args[i]);
            }
            if (!ALIASES.containsKey(alias)) usage("unknown alias: " + alias);
            byte[] dek = newDek(32);
            byte[] env = seal(alias, 1, dek);
            System.out.println("{\"encrypted_key\": \"" + PREFIX + b64(env) + "\", \"plaintext_key\": \"" + b64(dek) + "\"}");
            System.out.flush();
            return;
        }
        int port = -1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port":
                    if (i + 1 >= args.length) usage("--port needs a value");
                    port = Integer.parseInt(args[++i]);
                    break;
                case "--defect":
                    if (i + 1 >= args.length) usage("--defect needs a value");
                    setDefect(args[++i]);
                    break;
                case "--static-key":
                    staticKey = true;
                    break;
                case "--expires-in":
                    if (i + 1 >= args.length) usage("--expires-in needs a value");
                    expiresIn = Long.parseLong(args[++i]);
                    if (expiresIn <= 0) usage("--expires-in must be above 0");
                    break;
                default:
                    usage("unknown argument: " + args[i]);
            }
        }
        if (port < 0) usage("--port is required");
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 256);
        server.createContext("/", Service::handle);
        server.setExecutor(Executors.newFixedThreadPool(32));
        server.start();
        System.out.println("{\"port\": " + server.getAddress().getPort() + "}");
        System.out.flush();
    }
}
