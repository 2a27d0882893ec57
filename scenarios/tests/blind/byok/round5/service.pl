#!/usr/bin/perl
# Customer key service for partner `acme` (blind round 5), Perl 5 + CryptX.
# Correct by default; `--defect NAME` switches on one deliberate mistake.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use POSIX ();
use B ();
use Time::HiRes ();
use Time::Local ();
use Fcntl qw(:flock O_RDWR O_CREAT);
use File::Temp ();
use Encode ();
use JSON::PP ();
use MIME::Base64 ();
use Crypt::AuthEnc::GCM ();
use Crypt::Mac::HMAC qw(hmac);
use Crypt::PRNG qw(random_bytes);
use Crypt::Misc qw(encode_b64u decode_b64u encode_b64);

$| = 1;

my $PARTNER       = 'acme';
my $CLIENT_ID     = 'pl-client';
my $CLIENT_SECRET = 'Vb7-qZ2wLk9_Mx4Tn8Ra';
my $STATIC_KEY    = 'sk_pl_3Hq8Wd2Zx6Nr5Kt';
my @ALIASES       = ('ruby', 'onyx');
my %ALIAS         = map { $_ => 1 } @ALIASES;
my $DEFAULT_ALIAS = 'ruby';
my $SEED          = 'blind-round5-perl-fixed-seed-7f3a9c1e';
my $ISSUER        = 'acme-byok-pl';
my $BODY_LIMIT    = 16 * 1024;
my $SKEW          = 300;
my $ENV_LEN       = 65;    # 1 version + 4 key version + 12 nonce + 32 ct + 16 tag

my @DEFECTS = qw(
  secret_trim secret_prefix_regex secret_split_colon client_id_lc client_id_unanchored
  auth_accepts_bearer auth_form_credentials basic_utf8_die grant_type_lc grant_type_unanchored
  auth_ignores_content_type auth_charset_refused expires_in_string expires_in_week jwt_iat_millis
  token_two_part token_type_jwt auth_shape_flat
  jwt_alg_table_none jwt_missing_alg jwt_sig_prefix jwt_sig_cache jwt_exp_leeway rotate_skips_exp
  token_early_expiry auth_cached_token garbage_token_500
  static_key_prefix static_key_lc static_key_as_basic secret_as_bearer bearer_from_query bearer_any_scheme
  alias_lc alias_trim alias_not_bound prefix_case_insensitive prefix_unanchored prefix_optional
  version_any base64_lenient short_envelope_500 trailing_ignored header_not_authenticated
  tag_first_byte_skipped tag_last_byte_skipped decrypt_failed_500
  missing_field_404 no_ref_checks_500 nested_data_unwrapped decrypt_ignores_content_type
  content_type_unanchored chunked_501 plaintext_b64_newline decrypt_shape_unwrapped
  rotate_no_size_limit rotate_null_body rotate_alias_falsy_default rotate_unknown_alias_creates
  rotate_answers_default_alias rotate_ignores_alias dek_srand_time nonce_counter rotate_shape_names
  rotate_dek_16 rotate_bumps_master
  trace_lc trace_only_success trace_required timestamp_die_500 skew_future_ok request_id_optional no_duration
  head_ok no_allow_header rotate_any_method allow_all_methods
  method_405_html error_shape_flat error_code_lower www_auth_missing no_store_missing message_die_trace
  echo_secret_in_401 echo_token_in_401 kcv_header hsm_session_sleep
);
my %KNOWN = map { $_ => 1 } @DEFECTS;

# ---------------------------------------------------------------- arguments
my ($PORT, $DEFECT, $STATIC, $EXPIRES_IN, $MODE, $WRAP_ALIAS) = (undef, '', 0, undef, 'serve', $DEFAULT_ALIAS);
{
    my @a = @ARGV;
    if (@a && $a[0] eq 'wrap') { $MODE = 'wrap'; shift @a }
    while (@a) {
        my $x = shift @a;
        if    ($x eq '--port')          { $PORT = shift @a }
        elsif ($x eq '--defect')        { $DEFECT = shift @a // '' }
        elsif ($x eq '--static-key')    { $STATIC = 1 }
        elsif ($x eq '--expires-in')    { $EXPIRES_IN = shift @a }
        elsif ($x eq '--alias')         { $WRAP_ALIAS = shift @a }
        elsif ($x eq '--list-defects')  { print "$_\n" for @DEFECTS; exit 0 }
        else { print STDERR "unknown argument $x\n"; exit 2 }
    }
    if ($DEFECT ne '' && !$KNOWN{$DEFECT}) { print STDERR "unknown defect $DEFECT\n"; exit 2 }
    if (defined $EXPIRES_IN && $EXPIRES_IN !~ /^[1-9][0-9]{0,6}$/) { print STDERR "bad --expires-in\n"; exit 2 }
    $EXPIRES_IN = defined $EXPIRES_IN ? 0 + $EXPIRES_IN : ($DEFECT eq 'expires_in_week' ? 604800 : 3600);
}
sub D { $DEFECT eq $_[0] }

my $JWT_KEY = hmac('SHA256', $SEED, 'jwt-signing-key');
my $CMP_KEY = random_bytes(32);
my $STATE_DIR;

sub master_key {
    my ($alias, $ver) = @_;
    return hmac('SHA256', $SEED, "master:shared:v$ver") if D('alias_not_bound');
    return hmac('SHA256', $SEED, "master:$alias:v$ver");
}

sub ct_eq {    # constant time over digests, whatever the lengths
    my ($x, $y) = @_;
    my $a = hmac('SHA256', $CMP_KEY, $x);
    my $b = hmac('SHA256', $CMP_KEY, $y);
    my $r = 0;
    $r |= ord(substr($a, $_, 1)) ^ ord(substr($b, $_, 1)) for 0 .. 31;
    return $r == 0;
}

sub secrets_log {
    my $f = $ENV{BLIND_SECRETS_LOG} or return;
    open(my $fh, '>>', $f) or return;
    flock($fh, LOCK_EX);
    print $fh "$_\n" for @_;
    close $fh;
}

# state shared between forked connection handlers (only some defects need any)
sub state_update {
    my ($name, $code) = @_;
    my $path = "$STATE_DIR/$name";
    sysopen(my $fh, $path, O_RDWR | O_CREAT) or die "state: $!";
    flock($fh, LOCK_EX);
    local $/;
    my $old = <$fh>;
    $old = '' unless defined $old;
    my ($new, $ret) = $code->($old);
    if (defined $new) { seek($fh, 0, 0); truncate($fh, 0); print $fh $new; }
    close $fh;
    return $ret;
}

sub b64_std { MIME::Base64::encode_base64($_[0], '') }

sub plaintext_b64 {
    return MIME::Base64::encode_base64($_[0]) if D('plaintext_b64_newline');    # default eol "\n"
    return b64_std($_[0]);
}

# ---------------------------------------------------------------- envelope
my $NONCE_CTR = 0;
sub new_nonce {
    if (D('nonce_counter')) { $NONCE_CTR++; return ("\0" x 8) . pack('N', $NONCE_CTR) }
    return random_bytes(12);
}

sub current_master_version {
    my ($alias) = @_;
    return 1 unless D('rotate_bumps_master');
    return state_update("mver-$alias", sub { my $v = $_[0] || 1; (undef, $v) });
}

sub aad_for {
    my ($header, $alias) = @_;
    return "byok:v1:" . $alias if D('header_not_authenticated');
    return "byok:v1:" . $header if D('alias_not_bound');
    return "byok:v1:" . $header . "\0" . $alias;
}

sub seal {
    my ($alias, $dek, $ver) = @_;
    $ver //= 1;
    my $header = pack('C N', 1, $ver);
    my $nonce  = new_nonce();
    my $g = Crypt::AuthEnc::GCM->new('AES', master_key($alias, $ver), $nonce);
    $g->adata_add(aad_for($header, $alias));
    my $ct  = $g->encrypt_add($dek);
    my $tag = $g->encrypt_done();
    return 'byok:v1:' . b64_std($header . $nonce . $ct . $tag);
}

sub new_dek {
    if (D('dek_srand_time')) {
        srand(time);
        return join '', map { chr(int(rand(256))) } 1 .. 32;
    }
    return random_bytes(D('rotate_dek_16') ? 16 : 32);
}

# returns (status, code, message) or (200, plaintext)
sub open_envelope {
    my ($alias, $ek) = @_;
    my $rest;
    if (D('prefix_case_insensitive')) {
        return (400, 'INVALID_REQUEST', 'encrypted_key must start with byok:v1:') unless $ek =~ /^byok:v1:(.*)\z/is;
        $rest = $1;
    } elsif (D('prefix_unanchored')) {
        return (400, 'INVALID_REQUEST', 'encrypted_key must start with byok:v1:') unless $ek =~ /byok:v1:([^:]*)\z/s;
        $rest = $1;
    } elsif (D('version_any')) {
        return (400, 'INVALID_REQUEST', 'encrypted_key must start with byok:v1:') unless $ek =~ /^byok:v\d+:(.*)\z/s;
        $rest = $1;
    } elsif (substr($ek, 0, 8) eq 'byok:v1:') {
        $rest = substr($ek, 8);
    } elsif (D('prefix_optional')) {
        $rest = $ek;    # legacy keys were stored without their prefix
    } else {
        return (400, 'INVALID_REQUEST', 'encrypted_key must start with byok:v1:');
    }
    my $blob;
    if (D('base64_lenient')) {
        $blob = MIME::Base64::decode_base64($rest);
    } else {
        return (400, 'INVALID_REQUEST', 'encrypted_key is not standard padded base64 after byok:v1:')
          unless length($rest) && $rest =~ m{\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z};
        $blob = MIME::Base64::decode_base64($rest);
    }
    if (D('trailing_ignored')) {
        return (400, 'INVALID_REQUEST', 'encrypted_key is too short') if length($blob) < $ENV_LEN;
    } elsif (!D('short_envelope_500')) {
        return (400, 'INVALID_REQUEST', "encrypted_key must hold $ENV_LEN bytes") if length($blob) != $ENV_LEN;
    }
    my $header = substr($blob, 0, 5) // '';
    my $nonce  = substr($blob, 5, 12) // '';
    my $ct     = substr($blob, 17, 32) // '';
    my $tag    = substr($blob, 49, 16) // '';
    my ($fmt, $ver) = length($header) == 5 ? unpack('C N', $header) : (1, 1);
    return (400, 'INVALID_REQUEST', 'unknown envelope format') if $fmt != 1;
    $ver = 1 if D('header_not_authenticated');
    my $cur = current_master_version($alias);
    if (D('rotate_bumps_master')) {
        return (422, 'DECRYPTION_FAILED', 'the encrypted key does not decrypt under this alias') if $ver != $cur;
    } elsif ($ver < 1 || $ver > $cur) {
        return (422, 'DECRYPTION_FAILED', 'the encrypted key does not decrypt under this alias');
    }
    my $g = Crypt::AuthEnc::GCM->new('AES', master_key($alias, $ver), $nonce);
    $g->adata_add(aad_for($header, $alias));
    my $pt = $g->decrypt_add($ct);
    my $ok;
    if (D('tag_first_byte_skipped') || D('tag_last_byte_skipped')) {
        my $calc = $g->decrypt_done();
        my ($from, $to) = D('tag_first_byte_skipped') ? (1, 15) : (0, 14);
        my $diff = length($calc) ^ length($tag);
        $diff |= ord(substr($calc, $_, 1)) ^ ord(substr($tag, $_, 1)) for $from .. $to;
        $ok = $diff == 0;
    } else {
        $ok = $g->decrypt_done($tag);
    }
    if (!$ok) {
        die "GCM tag mismatch for alias $alias\n" if D('decrypt_failed_500');
        return (422, 'DECRYPTION_FAILED', 'the encrypted key does not decrypt under this alias');
    }
    unless (D('rotate_dek_16')) {
        return (422, 'DECRYPTION_FAILED', 'the encrypted key does not hold a 32-byte key') if length($pt) != 32;
    }
    return (200, $pt);
}

# ---------------------------------------------------------------- tokens
sub jwt_issue {
    my $now  = time;
    my $iat  = D('jwt_iat_millis') ? int(Time::HiRes::time() * 1000) : $now;
    my $claims = { iss => $ISSUER, sub => $CLIENT_ID, aud => $PARTNER, iat => $iat + 0,
                   exp => $now + $EXPIRES_IN, jti => unpack('H*', random_bytes(16)) };
    my $c = encode_b64u(JSON::PP->new->canonical->encode($claims));
    if (D('token_two_part')) {
        return $c . '.' . encode_b64u(hmac('SHA256', $JWT_KEY, $c));
    }
    my $h = encode_b64u(JSON::PP->new->canonical->encode({ alg => 'HS256', typ => 'JWT' }));
    return "$h.$c." . encode_b64u(hmac('SHA256', $JWT_KEY, "$h.$c"));
}

sub b64u_strict {
    my ($s) = @_;
    return undef unless defined $s && length($s) && $s =~ /\A[A-Za-z0-9_-]+\z/ && length($s) % 4 != 1;
    return decode_b64u($s);
}

sub json_obj {
    my ($bytes) = @_;
    return undef unless defined $bytes;
    my $v = eval { JSON::PP->new->utf8->decode($bytes) };
    return ref($v) eq 'HASH' ? $v : undef;
}

sub is_int {
    my ($v) = @_;
    return 0 if !defined $v || ref $v;
    my $f = B::svref_2object(\$v)->FLAGS;
    return 0 if $f & B::SVf_POK;
    return $v =~ /\A-?[0-9]+\z/ ? 1 : 0;
}

# verify a JWT; returns claims or undef. $opts{endpoint}
sub jwt_verify {
    my ($tok, $endpoint) = @_;
    my $now = time;
    my ($claims);
    if (D('token_two_part')) {
        my @p = split /\./, $tok, -1;
        return undef unless @p == 2 && $p[0] =~ /\A[A-Za-z0-9_-]+\z/ && $p[1] =~ /\A[A-Za-z0-9_-]+\z/;
        return undef unless $p[1] eq encode_b64u(hmac('SHA256', $JWT_KEY, $p[0]));
        $claims = json_obj(b64u_strict($p[0])) or return undef;
    } else {
        my @p = split /\./, $tok, -1;
        if (D('garbage_token_500')) {
            my $hdr = JSON::PP->new->utf8->decode(decode_b64u($p[0]));    # no eval: garbage dies
        }
        return undef unless @p == 3;
        my $hdr = json_obj(b64u_strict($p[0])) or return undef;
        $claims = json_obj(b64u_strict($p[1])) or return undef;
        my $expected = encode_b64u(hmac('SHA256', $JWT_KEY, "$p[0].$p[1]"));
        if (D('jwt_alg_table_none')) {
            my %verify = (HS256 => sub { ct_eq($_[0], $expected) }, none => sub { 1 });
            my $v = $verify{ $hdr->{alg} // '' } or return undef;
            $v->($p[2]) or return undef;
        } elsif (D('jwt_missing_alg')) {
            return undef if ($hdr->{alg} // '') eq 'none';
            if ($hdr->{alg}) {
                return undef unless $hdr->{alg} eq 'HS256' && length($p[2]) && ct_eq($p[2], $expected);
            }
        } elsif (D('jwt_sig_prefix')) {
            return undef unless ($hdr->{alg} // '') eq 'HS256';
            return undef unless $expected =~ /^\Q$p[2]\E/;
        } elsif (D('jwt_sig_cache')) {
            return undef unless ($hdr->{alg} // '') eq 'HS256';
            my $sig = $p[2];
            my $cached = state_update('sigcache', sub { my %s = map { $_ => 1 } split /\n/, $_[0]; (undef, $s{$sig} ? 1 : 0) });
            if (!$cached) {
                return undef unless length($sig) && ct_eq($sig, $expected);
                state_update('sigcache', sub { ($_[0] . "$sig\n", 1) });
            }
        } else {
            return undef unless defined $hdr->{alg} && !ref $hdr->{alg} && $hdr->{alg} eq 'HS256';
            return undef unless length($p[2]) && ct_eq($p[2], $expected);
        }
    }
    return undef unless is_int($claims->{exp});
    return undef unless defined $claims->{sub} && !ref $claims->{sub} && $claims->{sub} eq $CLIENT_ID;
    return undef unless defined $claims->{iss} && !ref $claims->{iss} && $claims->{iss} eq $ISSUER;
    my $exp = $claims->{exp};
    if (D('jwt_exp_leeway')) { $exp += 300 }
    if (D('token_early_expiry') && is_int($claims->{iat})) { $exp = $claims->{iat} + int($EXPIRES_IN / 2) }
    unless (D('rotate_skips_exp') && $endpoint eq 'rotate') {
        return undef if $now >= $exp;
    }
    return $claims;
}

# ---------------------------------------------------------------- responses
my %STATUS_TEXT = (200 => 'OK', 204 => 'No Content', 400 => 'Bad Request', 401 => 'Unauthorized', 403 => 'Forbidden',
    404 => 'Not Found', 405 => 'Method Not Allowed', 413 => 'Payload Too Large', 415 => 'Unsupported Media Type',
    422 => 'Unprocessable Entity', 429 => 'Too Many Requests', 431 => 'Request Header Fields Too Large',
    500 => 'Internal Server Error', 501 => 'Not Implemented', 503 => 'Service Unavailable');

sub json_resp {
    my ($status, $data, %h) = @_;
    return { status => $status, body => JSON::PP->new->canonical->encode($data), ctype => 'application/json', headers => \%h };
}

sub err {
    my ($status, $code, $msg, %h) = @_;
    $code = lc $code if D('error_code_lower');
    my $body = D('error_shape_flat') ? { error => $code, message => $msg } : { error => { code => $code, message => $msg } };
    return json_resp($status, $body, %h);
}

sub unauthorized {
    my ($scheme, $msg, $with_token) = @_;
    my %h;
    unless (D('www_auth_missing')) {
        $h{'WWW-Authenticate'} = $scheme eq 'Basic' ? 'Basic realm="acme-byok", charset="UTF-8"'
          : ($with_token ? 'Bearer realm="acme-byok", error="invalid_token"' : 'Bearer realm="acme-byok"');
    }
    return err(401, 'UNAUTHORIZED', $msg, %h);
}

# ---------------------------------------------------------------- request helpers
sub media_type {
    my ($req) = @_;
    my $ct = $req->{h}{'content-type'};
    return undef unless defined $ct;
    my ($mt) = split /;/, $ct, 2;
    $mt =~ s/^\s+|\s+$//g;
    return lc $mt;
}

sub uuid_ok { defined $_[0] && $_[0] =~ /\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\z/ }

sub parse_ts {
    my ($s) = @_;
    if (D('timestamp_die_500')) {
        my ($Y, $m, $d, $H, $M, $S) = ($s // '') =~ /(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/;
        return Time::Local::timegm($S, $M, $H, $d, $m - 1, $Y);    # croaks on anything that is no date
    }
    return undef unless defined $s
      && $s =~ /\A(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:([Zz])|([+-])(\d{2}):(\d{2}))\z/;
    my ($Y, $m, $d, $H, $M, $S, $z, $sign, $oh, $om) = ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
    return undef if $m < 1 || $m > 12 || $d < 1 || $d > 31 || $H > 23 || $M > 59 || $S > 60;
    my $t = eval { Time::Local::timegm($S > 59 ? 59 : $S, $M, $H, $d, $m - 1, $Y) };
    return undef unless defined $t;
    if (!$z) {
        return undef if $oh > 23 || $om > 59;
        my $off = ($oh * 3600 + $om * 60) * ($sign eq '-' ? -1 : 1);
        $t -= $off;
    }
    return $t;
}

sub check_tracing {
    my ($req) = @_;
    my $h = $req->{h};
    unless (D('request_id_optional')) {
        return err(400, 'INVALID_REQUEST', 'x-request-id is required') unless defined $h->{'x-request-id'};
        return err(400, 'INVALID_REQUEST', 'x-request-id must be a UUID') unless uuid_ok($h->{'x-request-id'});
    }
    if (defined $h->{'x-trace-id'}) {
        return err(400, 'INVALID_REQUEST', 'x-trace-id must be a UUID') unless uuid_ok($h->{'x-trace-id'});
    } elsif (D('trace_required')) {
        return err(400, 'INVALID_REQUEST', 'x-trace-id is required');
    }
    return err(400, 'INVALID_REQUEST', 'x-request-timestamp is required') unless defined $h->{'x-request-timestamp'};
    my $t = parse_ts($h->{'x-request-timestamp'});
    return err(400, 'INVALID_REQUEST', 'x-request-timestamp must be an RFC 3339 date-time with an offset') unless defined $t;
    my $skew = time - $t;
    if (D('skew_future_ok')) {
        return err(400, 'INVALID_REQUEST', 'x-request-timestamp is too far from the service clock') if $skew > $SKEW;
    } else {
        return err(400, 'INVALID_REQUEST', 'x-request-timestamp is too far from the service clock') if abs($skew) > $SKEW;
    }
    return undef;
}

sub parse_form {
    my ($body) = @_;
    my @pairs;
    return \@pairs if $body eq '';
    for my $p (split /&/, $body, -1) {
        next if $p eq '';
        my ($k, $v) = split /=/, $p, 2;
        $v //= '';
        for ($k, $v) { tr/+/ /; s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge; }
        push @pairs, [$k, $v];
    }
    return \@pairs;
}

sub bearer_token {
    my ($req) = @_;
    my $a = $req->{h}{authorization};
    if (D('bearer_from_query') && !defined $a && $req->{query} =~ /(?:^|&)access_token=([^&]+)/) {
        return ($1);
    }
    return (undef, 'no Authorization header') unless defined $a;
    if (D('bearer_any_scheme')) {
        my (undef, $tok) = split ' ', $a, 2;
        return (undef, 'no bearer token') unless defined $tok && length $tok;
        return ($tok);
    }
    if (D('static_key_as_basic') && $STATIC && $a =~ /\A[Bb]asic +(\S+)\z/) {
        my $dec = MIME::Base64::decode_base64($1);
        my ($u, $p) = split /:/, $dec, 2;
        return ($STATIC_KEY) if (defined $u && $u eq $STATIC_KEY) || (defined $p && $p eq $STATIC_KEY);
    }
    return (undef, 'Authorization must be Bearer <token>') unless $a =~ /\A[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9._~+\/-]+=*)\s*\z/;
    return ($1);
}

sub check_bearer {
    my ($req, $endpoint) = @_;
    my ($tok, $why) = bearer_token($req);
    return unauthorized('Bearer', "missing bearer token: $why", 0) unless defined $tok;
    if ($STATIC) {
        if (D('static_key_prefix')) { return undef if $tok =~ /^\Q$STATIC_KEY\E/ }
        elsif (D('static_key_lc'))  { return undef if lc($tok) eq lc($STATIC_KEY) }
        elsif (ct_eq($tok, $STATIC_KEY)) { return undef }
    }
    return undef if D('secret_as_bearer') && $tok eq $CLIENT_SECRET;
    return undef if jwt_verify($tok, $endpoint);
    my $msg = 'the bearer token is invalid or expired';
    $msg = "token rejected: $tok" if D('echo_token_in_401');
    return unauthorized('Bearer', $msg, 1);
}

sub is_str {
    my ($v) = @_;
    return 0 if !defined $v || ref $v;
    my $f = B::svref_2object(\$v)->FLAGS;
    return ($f & B::SVf_POK) && !($f & (B::SVf_IOK | B::SVf_NOK)) ? 1 : 0;
}

sub read_json_body {
    my ($req) = @_;
    my $mt = media_type($req);
    if (D('content_type_unanchored')) {
        return (undef, err(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json'))
          unless defined $req->{h}{'content-type'} && $req->{h}{'content-type'} =~ m{application/json}i;
    } elsif (!D('decrypt_ignores_content_type') || $req->{path} !~ /decrypt-key$/) {
        return (undef, err(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json'))
          unless defined $mt && $mt eq 'application/json';
    }
    my $v = eval { JSON::PP->new->utf8->allow_nonref->allow_bignum->decode($req->{body}) };
    if ($@) {
        my $m = D('message_die_trace') ? $@ : 'the body is not valid JSON';
        return (undef, err(400, 'INVALID_REQUEST', $m));
    }
    return ($v, undef);
}

# ---------------------------------------------------------------- endpoints
sub h_auth {
    my ($req) = @_;
    my $a = $req->{h}{authorization};
    my ($id, $secret);
    if (!defined $a) {
        if (D('auth_form_credentials')) {
            my %f = map { $_->[0] => $_->[1] } @{ parse_form($req->{body}) };
            ($id, $secret) = ($f{client_id}, $f{client_secret});
        }
        return unauthorized('Basic', 'client credentials are required (HTTP Basic)') unless defined $id && defined $secret;
    } elsif (D('auth_accepts_bearer') && $a =~ /\ABearer +(\S+)\z/i && jwt_verify($1, 'auth')) {
        ($id, $secret) = ($CLIENT_ID, $CLIENT_SECRET);
    } else {
        return unauthorized('Basic', 'Authorization must be Basic client credentials') unless $a =~ /\A[Bb][Aa][Ss][Ii][Cc] +(\S+)\s*\z/;
        my $b64 = $1;
        return unauthorized('Basic', 'malformed Basic credentials')
          unless $b64 =~ m{\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z};
        my $raw = MIME::Base64::decode_base64($b64);
        my $dec;
        if (D('basic_utf8_die')) {
            $dec = Encode::decode('UTF-8', $raw, Encode::FB_CROAK);
        } else {
            $dec = eval { Encode::decode('UTF-8', my $copy = $raw, Encode::FB_CROAK) };
            return unauthorized('Basic', 'malformed Basic credentials') unless defined $dec;
        }
        if (D('secret_split_colon')) {
            ($id, $secret) = split /:/, $raw;
        } else {
            my $i = index($raw, ':');
            return unauthorized('Basic', 'malformed Basic credentials') if $i < 0;
            ($id, $secret) = (substr($raw, 0, $i), substr($raw, $i + 1));
        }
        $id //= '';
        $secret //= '';
    }
    my $id_ok = D('client_id_lc') ? lc($id) eq $CLIENT_ID
      : D('client_id_unanchored') ? ($id =~ /\Q$CLIENT_ID\E/ ? 1 : 0)
      : ct_eq($id, $CLIENT_ID);
    my $s = $secret;
    if (D('secret_trim')) { $s =~ s/^\s+|\s+$//g }
    my $sec_ok = D('secret_prefix_regex') ? ($s =~ /^\Q$CLIENT_SECRET\E/ ? 1 : 0) : ct_eq($s, $CLIENT_SECRET);
    unless ($id_ok && $sec_ok) {
        my $msg = 'invalid client credentials';
        $msg = "invalid client credentials for '$id:$secret'" if D('echo_secret_in_401');
        return unauthorized('Basic', $msg);
    }
    unless (D('auth_ignores_content_type')) {
        my $ok = D('auth_charset_refused')
          ? (defined $req->{h}{'content-type'} && $req->{h}{'content-type'} eq 'application/x-www-form-urlencoded')
          : ((media_type($req) // '') eq 'application/x-www-form-urlencoded');
        return err(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/x-www-form-urlencoded') unless $ok;
    }
    if (D('grant_type_unanchored')) {
        return err(400, 'INVALID_REQUEST', 'grant_type must be client_credentials') unless $req->{body} =~ /grant_type=client_credentials/;
    } else {
        my @g = map { $_->[1] } grep { $_->[0] eq 'grant_type' } @{ parse_form($req->{body}) };
        return err(400, 'INVALID_REQUEST', 'grant_type is required') unless @g;
        return err(400, 'INVALID_REQUEST', 'grant_type must be given once') if @g > 1;
        my $ok = D('grant_type_lc') ? lc($g[0]) eq 'client_credentials' : $g[0] eq 'client_credentials';
        return err(400, 'INVALID_REQUEST', 'grant_type must be client_credentials') unless $ok;
    }
    my $tok;
    if (D('auth_cached_token')) {
        $tok = state_update('tokencache', sub {
            my ($t, $exp) = split /\n/, $_[0];
            return (undef, $t) if defined $exp && time <= $exp + 60;    # "grace" so clients near expiry still get it
            my $n = jwt_issue();
            my $c = json_obj(b64u_strict((split /\./, $n)[1]));
            ("$n\n$c->{exp}\n", $n);
        });
    } else {
        $tok = jwt_issue();
    }
    secrets_log($tok);
    my $ei = D('expires_in_string') ? "$EXPIRES_IN" : $EXPIRES_IN + 0;
    my $tt = D('token_type_jwt') ? 'JWT' : 'Bearer';
    my $data = { access_token => $tok, token_type => $tt, expires_in => $ei };
    return json_resp(200, D('auth_shape_flat') ? $data : { data => $data });
}

sub h_decrypt {
    my ($req) = @_;
    if (my $e = check_bearer($req, 'decrypt')) { return $e }
    my ($v, $e) = read_json_body($req);
    return $e if $e;
    my ($alias, $ek);
    if (D('no_ref_checks_500')) {
        ($alias, $ek) = ($v->{data}{key_alias}, $v->{data}{encrypted_key});
        return err(400, 'INVALID_REQUEST', 'data.key_alias must be a string') unless is_str($alias);
        return err(400, 'INVALID_REQUEST', 'data.encrypted_key must be a string') unless is_str($ek);
    } else {
        return err(400, 'INVALID_REQUEST', 'the body must be a JSON object') unless ref($v) eq 'HASH';
        my $d = $v->{data};
        return err(400, 'INVALID_REQUEST', 'data is required') unless defined $d;
        return err(400, 'INVALID_REQUEST', 'data must be an object') unless ref($d) eq 'HASH';
        if (D('nested_data_unwrapped')) { $d = $d->{data} while ref($d->{data}) eq 'HASH' }
        ($alias, $ek) = ($d->{key_alias}, $d->{encrypted_key});
        if (D('missing_field_404') && !defined $alias) {
            return err(404, 'KEY_NOT_FOUND', 'no such key alias');
        }
        return err(400, 'INVALID_REQUEST', 'data.key_alias is required') unless exists $d->{key_alias};
        return err(400, 'INVALID_REQUEST', 'data.key_alias must be a string') unless is_str($alias);
        return err(400, 'INVALID_REQUEST', 'data.encrypted_key is required') unless exists $d->{encrypted_key};
        return err(400, 'INVALID_REQUEST', 'data.encrypted_key must be a string') unless is_str($ek);
    }
    $alias = lc $alias if D('alias_lc');
    $alias =~ s/\s+$// if D('alias_trim');
    return err(404, 'KEY_NOT_FOUND', 'no such key alias') unless $ALIAS{$alias};
    Time::HiRes::sleep(0.3) if D('hsm_session_sleep');    # "open an HSM session" per call
    my ($st, @r) = open_envelope($alias, $ek);
    return err($st, @r) if $st != 200;
    my $pt = $r[0];
    my $b = plaintext_b64($pt);
    secrets_log(b64_std($pt));
    my %h;
    $h{'X-Key-Check'} = unpack('H8', $pt) if D('kcv_header');
    return json_resp(200, D('decrypt_shape_unwrapped') ? { plaintext_key => $b } : { data => { plaintext_key => $b } }, %h);
}

sub h_rotate {
    my ($req) = @_;
    if (my $e = check_bearer($req, 'rotate')) { return $e }
    my $alias = $DEFAULT_ALIAS;
    if (length $req->{body}) {
        my ($v, $e) = read_json_body($req);
        return $e if $e;
        if (D('rotate_null_body') && !$v) {
            # nothing asked: the default alias
        } else {
            return err(400, 'INVALID_REQUEST', 'the body must be {"data": {"key_alias": string}}') unless ref($v) eq 'HASH';
            my $d = $v->{data};
            return err(400, 'INVALID_REQUEST', 'data must be an object') unless ref($d) eq 'HASH';
            if (D('rotate_alias_falsy_default')) {
                $alias = $d->{key_alias} || $DEFAULT_ALIAS;
                return err(400, 'INVALID_REQUEST', 'data.key_alias must be a string') if ref $alias;
            } else {
                return err(400, 'INVALID_REQUEST', 'data.key_alias is required') unless exists $d->{key_alias};
                return err(400, 'INVALID_REQUEST', 'data.key_alias must be a string') unless is_str($d->{key_alias});
                $alias = $d->{key_alias};
            }
        }
    }
    unless (D('rotate_unknown_alias_creates')) {
        return err(404, 'KEY_NOT_FOUND', 'no such key alias') unless $ALIAS{$alias};
    }
    my $seal_alias = D('rotate_ignores_alias') ? $DEFAULT_ALIAS : $alias;
    my $ver = 1;
    if (D('rotate_bumps_master')) {
        $ver = state_update("mver-$seal_alias", sub { my $v = ($_[0] || 1) + 1; ($v, $v) });
    }
    my $dek = new_dek();
    my $env = seal($seal_alias, $dek, $ver);
    secrets_log(b64_std($dek));
    my $ans_alias = D('rotate_answers_default_alias') ? $DEFAULT_ALIAS : $alias;
    my $data = D('rotate_shape_names')
      ? { encrypted_key => $env, key_alias => $ans_alias, plaintext_key => plaintext_b64($dek) }
      : { encrypted_dek => $env, key_alias => $ans_alias, plaintext_dek => plaintext_b64($dek) };
    return json_resp(200, { data => $data });
}

my %ROUTES = ("/$PARTNER/byok/v1/auth" => \&h_auth, "/$PARTNER/byok/v1/decrypt-key" => \&h_decrypt,
              "/$PARTNER/byok/v1/rotate-key" => \&h_rotate);

sub dispatch {
    my ($req) = @_;
    my $h = $ROUTES{ $req->{path} };
    return err(404, 'NOT_FOUND', 'no such endpoint') unless $h;
    my $m = $req->{method};
    if ($m ne 'POST' && !(D('rotate_any_method') && $req->{path} =~ /rotate-key$/)) {
        if (D('head_ok') && $m eq 'HEAD') { return { status => 200, body => '', ctype => 'application/json', headers => {} } }
        my %hd;
        $hd{Allow} = D('allow_all_methods') ? 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' : 'POST' unless D('no_allow_header');
        if (D('method_405_html')) {
            return { status => 405, ctype => 'text/html',
                     body => "<title>405 Method Not Allowed</title>\n<h1>405 Method Not Allowed</h1>\n", headers => \%hd };
        }
        return err(405, 'METHOD_NOT_ALLOWED', "use POST on $req->{path}", %hd);
    }
    if (my $e = check_tracing($req)) { return $e }
    return $h->($req);
}

# ---------------------------------------------------------------- HTTP/1.1 connection handling
my $IDLE = 15;

sub fill {
    my ($s, $bufref, $timeout) = @_;
    my $sel = IO::Select->new($s);
    return 0 unless $sel->can_read($timeout);
    my $n = sysread($s, $$bufref, 65536, length $$bufref);
    return $n ? $n : 0;
}

sub write_resp {
    my ($s, $req, $r, $close, $t0) = @_;
    my $st = $r->{status};
    my %h = %{ $r->{headers} || {} };
    my $trace = $req ? $req->{h}{'x-trace-id'} : undef;
    if (defined $trace && $trace =~ /\A[\x20-\x7e]*\z/ && !(D('trace_only_success') && $st >= 400)) {
        $h{'X-Trace-Id'} = D('trace_lc') ? lc $trace : $trace;
    }
    $h{'X-Request-Duration'} = sprintf('%d', (Time::HiRes::time() - $t0) * 1000) unless D('no_duration');
    $h{'Cache-Control'} = 'no-store' unless D('no_store_missing');
    $h{'Pragma'} = 'no-cache' unless D('no_store_missing');
    my $body = $r->{body} // '';
    $h{'Content-Type'} = $r->{ctype} if length($body) || $r->{ctype};
    $h{'Content-Length'} = length $body;
    $h{'Connection'} = $close ? 'close' : 'keep-alive';
    $body = '' if $req && $req->{method} eq 'HEAD';
    my $out = "HTTP/1.1 $st " . ($STATUS_TEXT{$st} // 'Status') . "\r\n";
    $out .= "$_: $h{$_}\r\n" for sort keys %h;
    $out .= "\r\n" . $body;
    local $SIG{PIPE} = 'IGNORE';
    while (length $out) {
        my $n = syswrite($s, $out);
        return 0 unless $n;
        substr($out, 0, $n, '');
    }
    return 1;
}

sub serve_conn {
    my ($s) = @_;
    my $buf = '';
    while (1) {
        return if getppid() != $main::PARENT;
        my $i;
        while (($i = index($buf, "\r\n\r\n")) < 0) {
            if (length($buf) > 65536) {
                write_resp($s, undef, err(431, 'INVALID_REQUEST', 'request head too large'), 1, Time::HiRes::time());
                return;
            }
            return unless fill($s, \$buf, $IDLE);
        }
        my $t0 = Time::HiRes::time();
        my $head = substr($buf, 0, $i);
        substr($buf, 0, $i + 4, '');
        $head =~ s/\A(?:\r\n)+//;
        my @lines = split /\r\n/, $head;
        my $rl = shift(@lines) // '';
        my ($method, $target, $proto) = $rl =~ m{\A([A-Z]+) (\S+) (HTTP/1\.[01])\z};
        unless ($method) {
            write_resp($s, undef, err(400, 'INVALID_REQUEST', 'malformed request line'), 1, $t0);
            return;
        }
        my %h;
        my $bad = 0;
        for my $l (@lines) {
            my ($k, $v) = $l =~ /\A([!#\$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\z/ or do { $bad = 1; last };
            $k = lc $k;
            $h{$k} = exists $h{$k} ? "$h{$k}, $v" : $v;
        }
        my ($path, $query) = split /\?/, $target, 2;
        my $req = { method => $method, path => $path, query => $query // '', h => \%h, body => '' };
        if ($bad) { write_resp($s, $req, err(400, 'INVALID_REQUEST', 'malformed header field'), 1, $t0); return }
        my $close = ($proto eq 'HTTP/1.0' && lc($h{connection} // '') ne 'keep-alive') || lc($h{connection} // '') eq 'close';
        my $limit = $BODY_LIMIT;
        $limit = 1 << 30 if D('rotate_no_size_limit') && $path =~ /rotate-key$/;
        my $too_large = 0;
        if (defined $h{'transfer-encoding'}) {
            if (lc $h{'transfer-encoding'} ne 'chunked') {
                write_resp($s, $req, err(400, 'INVALID_REQUEST', 'unsupported transfer-encoding'), 1, $t0);
                return;
            }
            if (D('chunked_501')) {
                write_resp($s, $req, err(501, 'INTERNAL_ERROR', 'chunked request bodies are not supported'), 1, $t0);
                return;
            }
            syswrite($s, "HTTP/1.1 100 Continue\r\n\r\n") if lc($h{expect} // '') eq '100-continue';
            my $body = '';
            my $total = 0;
            while (1) {
                my $j;
                while (($j = index($buf, "\r\n")) < 0) { return unless fill($s, \$buf, $IDLE) }
                my $szl = substr($buf, 0, $j);
                substr($buf, 0, $j + 2, '');
                my ($hex) = $szl =~ /\A([0-9A-Fa-f]{1,8})(?:;.*)?\z/ or do {
                    write_resp($s, $req, err(400, 'INVALID_REQUEST', 'broken chunked framing'), 1, $t0);
                    return;
                };
                my $sz = hex $hex;
                if ($sz == 0) {
                    while (1) {    # trailers
                        while (($j = index($buf, "\r\n")) < 0) { return unless fill($s, \$buf, $IDLE) }
                        my $tl = substr($buf, 0, $j);
                        substr($buf, 0, $j + 2, '');
                        last if $tl eq '';
                    }
                    last;
                }
                while (length($buf) < $sz + 2) { return unless fill($s, \$buf, $IDLE) }
                $total += $sz;
                if ($total > $limit) { $too_large = 1 } else { $body .= substr($buf, 0, $sz) }
                substr($buf, 0, $sz + 2, '');
                if ($total > 8 * 1024 * 1024) { return }
            }
            $req->{body} = $too_large ? '' : $body;
        } elsif (defined $h{'content-length'}) {
            unless ($h{'content-length'} =~ /\A[0-9]{1,12}\z/) {
                write_resp($s, $req, err(400, 'INVALID_REQUEST', 'bad Content-Length'), 1, $t0);
                return;
            }
            my $cl = 0 + $h{'content-length'};
            if ($cl > $limit) {
                $too_large = 1;
                if (lc($h{expect} // '') eq '100-continue' || $cl > 4 * 1024 * 1024) {
                    write_resp($s, $req, err(413, 'PAYLOAD_TOO_LARGE', "request bodies are limited to $BODY_LIMIT bytes"), 1, $t0);
                    return;
                }
                while (length($buf) < $cl) {    # read it past, keeping none of it
                    my $have = length $buf;
                    $buf = '';
                    $cl -= $have;
                    return unless fill($s, \$buf, 5);
                }
                substr($buf, 0, $cl, '');
            } else {
                syswrite($s, "HTTP/1.1 100 Continue\r\n\r\n") if lc($h{expect} // '') eq '100-continue' && $cl > length $buf;
                while (length($buf) < $cl) { return unless fill($s, \$buf, $IDLE) }
                $req->{body} = substr($buf, 0, $cl);
                substr($buf, 0, $cl, '');
            }
        }
        my $r;
        if ($too_large) {
            $r = err(413, 'PAYLOAD_TOO_LARGE', "request bodies are limited to $BODY_LIMIT bytes");
            $close = 1;
        } else {
            $r = eval { dispatch($req) };
            if (!$r) {
                my $e = $@ || 'unknown';
                print STDERR "internal error: $e";
                $r = err(500, 'INTERNAL_ERROR', 'internal error');
            }
        }
        write_resp($s, $req, $r, $close, $t0) or return;
        return if $close;
    }
}

# ---------------------------------------------------------------- main
if ($MODE eq 'wrap') {
    unless ($ALIAS{$WRAP_ALIAS}) { print STDERR "unknown alias $WRAP_ALIAS\n"; exit 2 }
    $STATE_DIR = File::Temp::tempdir(CLEANUP => 1);
    my $dek = random_bytes(D('rotate_dek_16') ? 16 : 32);
    my $env = seal($WRAP_ALIAS, $dek, 1);
    secrets_log(b64_std($dek));
    print JSON::PP->new->canonical->encode({ encrypted_key => $env, plaintext_key => b64_std($dek) }), "\n";
    exit 0;
}

die "--port is required\n" unless defined $PORT;
$STATE_DIR = File::Temp::tempdir(CLEANUP => 1);
my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $PORT, Listen => 128, ReuseAddr => 1, Proto => 'tcp')
  or die "listen: $!\n";
$SIG{CHLD} = 'IGNORE';
$main::PARENT = $$;
$SIG{TERM} = $SIG{INT} = sub { exit 0 };
printf "{\"port\": %d}\n", $srv->sockport;
while (1) {
    my $c = $srv->accept or next;
    my $pid = fork;
    if (!defined $pid) { close $c; next }
    if ($pid == 0) {
        $SIG{TERM} = $SIG{INT} = 'DEFAULT';
        close $srv;
        $c->autoflush(1);
        binmode $c;
        serve_conn($c);
        close $c;
        POSIX::_exit(0);
    }
    close $c;
}
