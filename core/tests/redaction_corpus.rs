//! `redactSecrets` against a corpus of realistic credentials, one family at
//! a time, generated here from a fixed seed (fake, never a live key, and
//! never written into the repository where a secret scanner would flag
//! it), each in the places transcripts hold them (prose, shell, config
//! files, JSON, headers, URLs), and against negatives: code and prose that
//! speak of passwords and tokens, placeholders, and every text of the
//! conformance vectors and the fixture logs, which hold no credential.

mod common;

use dsh_session_reference::harden::secrets::{may_hold_secret, redact, secret_kinds};

/// Random strings of an alphabet, from a fixed seed.
struct Gen(common::Rng);

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";

impl Gen {
    fn of(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n).map(|_| chars[self.0.below(chars.len() as u64) as usize]).collect()
    }
    fn alnum(&mut self, n: usize) -> String {
        // At least one digit and one letter, as generated keys have.
        loop {
            let s = self.of(&format!("{UPPER}{LOWER}{DIGITS}"), n);
            if s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic()) {
                return s;
            }
        }
    }
    fn b64(&mut self, n: usize) -> String {
        let mut s = self.of(&format!("{UPPER}{LOWER}{DIGITS}+/"), n - 1);
        s.push_str(&self.of(&format!("{UPPER}{LOWER}{DIGITS}"), 1));
        s
    }
    fn url_safe(&mut self, n: usize) -> String {
        let mut s = self.of(&format!("{UPPER}{LOWER}{DIGITS}_-"), n - 1);
        s.push_str(&self.of(&format!("{UPPER}{LOWER}{DIGITS}"), 1));
        s
    }
}

/// A credential in its context: the text, the secret that must go and
/// the kind it is redacted as.
struct Case {
    text: String,
    secret: String,
    kind: &'static str,
}

fn case(kind: &'static str, secret: String, text: impl FnOnce(&str) -> String) -> Case {
    Case { text: text(&secret), secret, kind }
}

/// One realistic credential of every family, in a realistic context.
fn corpus() -> Vec<Case> {
    let mut g = Gen(common::Rng(0x5ec7_e75c_0ffe_e001));
    let aws_id = format!("AKIA{}", g.of(&format!("{UPPER}{DIGITS}"), 16));
    let aws_secret = g.b64(40);
    let pem_body: Vec<String> = (0..4).map(|_| g.b64(64)).collect();
    let pgp_body: Vec<String> = (0..4).map(|_| g.b64(64)).collect();
    let azure_key = format!("{}==", g.b64(86));
    let basic = g.b64(24);
    vec![
        case("aws-access-key-id", aws_id.clone(), |s| format!("export AWS_ACCESS_KEY_ID={s}")),
        case("aws-secret-access-key", aws_secret.clone(), |s| {
            format!("[default]\naws_access_key_id = {aws_id}\naws_secret_access_key = {s}\nregion = eu-west-1")
        }),
        case("aws-secret-access-key", g.b64(40), |s| format!("Access key ID: {aws_id}  Secret access key: {s}")),
        case("aws-secret-access-key", g.b64(40), |s| format!("User,{aws_id},{s}\n")),
        case("aws-secret-access-key", g.b64(40), |s| format!(r#"{{"AccessKeyId": "{aws_id}", "SecretAccessKey": "{s}"}}"#)),
        case("github-token", format!("ghp_{}", g.alnum(36)), |s| format!("git clone https://{s}@github.com/acme/app")),
        case("github-token", format!("github_pat_11{}_{}", g.alnum(20), g.alnum(59)), |s| format!("GH_TOKEN={s} gh pr list")),
        case("anthropic-api-key", format!("sk-ant-api03-{}AA", g.url_safe(93)), |s| format!("ANTHROPIC_API_KEY={s}")),
        case("openai-api-key", format!("sk-proj-{}", g.url_safe(100)), |s| format!("client = OpenAI(api_key=\"{s}\")")),
        case("deepseek-api-key", format!("sk-{}", g.of(HEX, 32)), |s| {
            format!("curl https://api.deepseek.com/chat/completions -H \"Authorization: Bearer {s}\"")
        }),
        case("deepseek-api-key", format!("sk-{}", g.of(HEX, 32)), |s| format!("DEEPSEEK_API_KEY={s}")),
        case("openrouter-api-key", format!("sk-or-v1-{}", g.of(HEX, 64)), |s| format!("key: {s}")),
        case("slack-token", format!("xoxb-{}-{}-{}", g.of(DIGITS, 12), g.of(DIGITS, 13), g.alnum(24)), |s| {
            format!("SLACK_BOT_TOKEN={s}")
        }),
        case("google-api-key", format!("AIza{}", g.alnum(35)), |s| format!("maps?key={s}&callback=init")),
        case("google-oauth-secret", format!("GOCSPX-{}", g.alnum(28)), |s| format!("\"client_secret\":\"{s}\"")),
        case("stripe-key", format!("sk_live_{}", g.alnum(99)), |s| format!("Stripe.api_key = '{s}'")),
        case("private-key", format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", pem_body.join("\n")), |s| {
            format!("cat id_rsa\n{s}\n")
        }),
        case(
            "private-key",
            format!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\nComment: fake key\n\n{}\n={}\n-----END PGP PRIVATE KEY BLOCK-----",
                pgp_body.join("\n"),
                g.b64(4)
            ),
            |s| format!("gpg --export-secret-keys --armor gives\n{s}\nkeep it offline"),
        ),
        case("jwt", format!("eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}", g.url_safe(40), g.url_safe(43)), |s| format!("token {s}")),
        case("gitlab-token", format!("glpat-{}", g.url_safe(20)), |s| format!("PRIVATE-TOKEN: {s}")),
        case("npm-token", format!("npm_{}", g.alnum(36)), |s| format!("//registry.npmjs.org/:_authToken={s}")),
        case("pypi-token", format!("pypi-AgEIcHlwaS5vcmc{}", g.url_safe(150)), |s| format!("[pypi]\nusername = __token__\npassword = {s}")),
        case("sendgrid-api-key", format!("SG.{}.{}", g.url_safe(22), g.url_safe(43)), |s| format!("SENDGRID_API_KEY='{s}'")),
        case("twilio-api-key", format!("SK{}", g.of(HEX, 32)), |s| format!("twilio api:core:keys:create -> sid {s}")),
        case("secret", g.of(HEX, 32), |s| format!("TWILIO_ACCOUNT_SID=AC{}\nTWILIO_AUTH_TOKEN={s}", "0".repeat(32))),
        case("huggingface-token", format!("hf_{}", g.of(&format!("{UPPER}{LOWER}"), 34)), |s| format!("huggingface-cli login --token {s}")),
        case("groq-api-key", format!("gsk_{}", g.alnum(52)), |s| format!("GROQ_API_KEY={s}")),
        case("digitalocean-token", format!("dop_v1_{}", g.of(HEX, 64)), |s| format!("doctl auth init -t {s}")),
        case("shopify-token", format!("shpat_{}", g.of(HEX, 32)), |s| format!("X-Shopify-Access-Token: {s}")),
        case("docker-token", format!("dckr_pat_{}", g.url_safe(27)), |s| format!("echo {s} | docker login -u me --password-stdin")),
        case("vault-token", format!("hvs.{}", g.url_safe(95)), |s| format!("VAULT_TOKEN={s} vault kv get secret/app")),
        case("databricks-token", format!("dapi{}", g.of(HEX, 32)), |s| format!("databricks configure: {s}")),
        case("linear-api-key", format!("lin_api_{}", g.alnum(40)), |s| format!("LINEAR_API_KEY={s}")),
        case("postman-api-key", format!("PMAK-{}-{}", g.of(HEX, 24), g.of(HEX, 34)), |s| format!("postman login --with-api-key {s}")),
        case("atlassian-token", format!("ATATT3{}", g.url_safe(186)), |s| format!("JIRA_API_TOKEN={s}")),
        case("rubygems-token", format!("rubygems_{}", g.of(HEX, 48)), |s| format!("GEM_HOST_API_KEY: {s}")),
        case("newrelic-key", format!("NRAK-{}", g.of(&format!("{UPPER}{DIGITS}"), 27)), |s| format!("newrelic profile add --apiKey {s}")),
        case("mailgun-key", format!("key-{}", g.of(HEX, 32)), |s| format!("auth=('api', '{s}')")),
        case("telegram-bot-token", format!("{}:AA{}", g.of(DIGITS, 10), g.url_safe(33)), |s| format!("https://api.telegram.org/bot{s}/getMe")),
        case("age-secret-key", format!("AGE-SECRET-KEY-1{}", g.of("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)), |s| format!("# created\n{s}")),
        case("azure-storage-key", azure_key, |s| {
            format!("DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey={s};EndpointSuffix=core.windows.net")
        }),
        case("azure-sas-signature", format!("{}%2B{}%3D", g.alnum(30), g.alnum(10)), |s| {
            format!("https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig={s}")
        }),
        case("password", format!("{}!{}", g.alnum(8), g.of(DIGITS, 3)), |s| format!("postgres://app_user:{s}@db.internal:5432/app")),
        case("password", g.alnum(16), |s| format!("DATABASE_URL=mysql://root:{s}@127.0.0.1:3306/shop")),
        case("password", g.alnum(20), |s| format!("mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/test")),
        case("password", g.alnum(12), |s| format!("REDIS_URL=redis://:{s}@cache:6379/0")),
        case("password", g.alnum(14), |s| format!("wget https://deploy:{s}@artifacts.example.org/build.tar.gz")),
        case("password", g.alnum(14), |s| format!("curl -u admin:{s} https://jenkins.local/api/json")),
        case("password", format!("{}#{}", g.alnum(7), g.alnum(4)), |s| format!("DB_PASSWORD={s}")),
        case("password", format!("{}-{}", g.alnum(6), g.of(DIGITS, 4)), |s| format!(r#"{{"user": "svc", "password": "{s}"}}"#)),
        case("authorization", g.alnum(32), |s| format!("curl -H 'Authorization: Bearer {s}' https://api.acme.dev/v1/me")),
        case("authorization", format!("{}.{}", g.alnum(20), g.url_safe(30)), |s| format!("Authorization: Bearer {s}\nAccept: */*")),
        case("authorization", basic, |s| format!("GET / HTTP/1.1\nAuthorization: Basic {s}")),
        case("secret", g.alnum(40), |s| format!("X-Api-Key: {s}")),
        case("secret", g.url_safe(32), |s| format!("client_secret: {s}\nclient_id: web")),
        case("secret", g.alnum(24), |s| format!(r#"const config = {{ apiKey: "{s}" }};"#)),
    ]
}

#[test]
fn every_family_is_redacted_in_its_context_and_leaves_nothing_of_the_secret() {
    let mut kinds = std::collections::BTreeSet::new();
    let corpus = corpus();
    assert!(corpus.len() >= 43, "{}", corpus.len());
    for c in &corpus {
        kinds.insert(c.kind);
        // As said, and as quoted in a JSON document said in a message.
        let quoted = serde_json::to_string(&serde_json::json!({"output": c.text})).unwrap();
        for text in [c.text.clone(), format!("Here it is: {}. Done.", c.text), quoted] {
            let (out, n) = redact(&text);
            assert!(n >= 1, "{} not found in {text:?}", c.kind);
            assert!(out.contains(&format!("[redacted {}]", c.kind)), "{}: {out:?}", c.kind);
            // No run of 8 characters of the secret is left.
            let chars: Vec<char> = c.secret.chars().collect();
            for w in chars.windows(8.min(chars.len())) {
                let piece: String = w.iter().collect();
                if format!("[redacted {}]", c.kind).contains(&piece) {
                    continue; // a prefix that names its kind
                }
                assert!(!out.contains(&piece), "{}: {piece:?} left in {out:?}", c.kind);
            }
            assert_eq!(redact(&out).1, 0, "final: {out:?}");
        }
        // The prefilter lets the message's JSON literal through.
        let literal = serde_json::to_string(&c.text).unwrap();
        assert!(may_hold_secret(literal.as_bytes()), "{literal}");
        assert!(may_hold_secret(literal.replace('/', "\\/").as_bytes()), "{literal}");
    }
    // The Slack webhook is in `harden.rs`'s corpus.
    let missing: Vec<&str> = secret_kinds().filter(|k| !kinds.contains(k) && *k != "slack-webhook").collect();
    assert!(missing.is_empty(), "no case of {missing:?}");
}

/// Code and prose about credentials that hold none.
const NEGATIVES: &[&str] = &[
    "password = getpass.getpass()",
    "password = os.environ[\"DB_PASSWORD\"]",
    "let password = config.db.password;",
    "if (password.length < 8) throw new Error(\"password too short\")",
    "Reset your password: https://example.com/reset?token=<token>",
    "export OPENAI_API_KEY=${OPENAI_API_KEY}",
    "export API_KEY=$API_KEY",
    "api_key: str = Field(..., description=\"the key\")",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "-H \"Authorization: Bearer ${API_TOKEN}\"",
    "postgres://user:password@localhost:5432/db",
    "postgres://user:${DB_PASSWORD}@localhost/db",
    "mysql://root:<password>@127.0.0.1/test",
    "http://localhost:8080/path and https://example.com:443/x",
    "ssh git@github.com and git@gitlab.com:group/repo.git",
    "Use `password: changeme` only in development.",
    "password: ********",
    "The password is stored hashed; the token expires after 3600 seconds.",
    "max_tokens = 4096, tokenizer = AutoTokenizer.from_pretrained(\"gpt2\")",
    "secretName: my-app-tls\nsecretKeyRef:\n  name: db\n  key: password",
    "token_count: 12345678901234567890",
    "client_secret = settings.CLIENT_SECRET",
    "private_key = load_pem_private_key(data, password=None)",
    "git push -u origin main && set -u",
    "The AccountKey setting is documented at https://learn.microsoft.com/azure/storage",
    "SKU-12345 and SKIP the SKETCH; TASK done",
    "key-value stores such as etcd and key-rotation",
    "user@example.com wrote: meet at 10:30@cafe",
    "a sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 and sk-learn",
    "passphrase: \"correct horse\"",
    "The `Authorization` header carries the credentials.",
    "curl -u \"$USER:$PASS\" https://api.example.com",
    "password=${{ secrets.PW }}",
];

#[test]
fn code_and_prose_about_credentials_are_left_alone() {
    for &text in NEGATIVES {
        let (out, n) = redact(text);
        assert_eq!((n, out.as_ref()), (0, text), "{text}");
    }
}

/// Every string (keys and values) of the JSON documents below `dir`, one
/// document a file or a line.
fn strings_below(dir: &std::path::Path, out: &mut Vec<String>) {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.push(k.clone());
                    walk(v, out);
                }
            }
            _ => {}
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            strings_below(&path, out);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => walk(&v, out),
            Err(_) => {
                for line in text.lines() {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                        walk(&v, out);
                    }
                }
            }
        }
    }
}

#[test]
fn the_conformance_and_fixture_texts_hold_nothing_to_redact() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut strings = Vec::new();
    strings_below(&common::conformance_dir(), &mut strings);
    strings_below(&root.join("tests/fixtures"), &mut strings);
    assert!(strings.len() > 10_000, "{}", strings.len());
    // Each distinct text once (the vectors repeat their sessions).
    strings.sort_unstable();
    strings.dedup();
    let found: Vec<String> = strings
        .iter()
        .filter_map(|s| {
            let (out, n) = redact(s);
            (n > 0).then(|| out.chars().take(200).collect())
        })
        .collect();
    assert!(found.is_empty(), "{} redacted: {found:#?}", found.len());
}
