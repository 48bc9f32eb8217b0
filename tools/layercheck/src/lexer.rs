//! Lexer: Rust source text to the few token kinds the import graph needs.
//!
//! Contract: comments (line, doc and nested block comments), string, byte, raw and C string
//! literals and char literals never produce identifiers, so `"crate::x"` or `// crate::x`
//! cannot make an edge. String contents are kept (a `#[path = "..."]` attribute needs them).
//! Every token carries the 1-based line it starts on. An unterminated comment or literal is
//! an error, not a guess.

/// One token of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// An identifier or keyword (`r#` of a raw identifier removed).
    Ident(String),
    /// The contents of a string literal of any flavour.
    Str(String),
    /// `::`
    PathSep,
    /// Any other single punctuation character. Lifetimes, numbers and char literals
    /// are dropped: no import ever goes through them.
    Punct(char),
}

/// A token and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub line: usize,
}

/// Splits `source` into tokens; `Err` names the line of an unterminated comment or literal.
pub fn tokenize(source: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = source.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        pos: 0,
        line: 1,
    };
    let mut tokens = Vec::new();
    while let Some(c) = lexer.peek(0) {
        let line = lexer.line;
        if c == '\n' || c.is_whitespace() {
            lexer.bump();
        } else if c == '/' && lexer.peek(1) == Some('/') {
            while lexer.peek(0).is_some_and(|c| c != '\n') {
                lexer.bump();
            }
        } else if c == '/' && lexer.peek(1) == Some('*') {
            lexer.block_comment()?;
        } else if c == '"' {
            let text = lexer.quoted_string()?;
            tokens.push(Token {
                kind: TokenKind::Str(text),
                line,
            });
        } else if c == '\'' {
            lexer.char_or_lifetime()?;
        } else if c.is_ascii_digit() {
            while lexer
                .peek(0)
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                lexer.bump();
            }
        } else if c.is_alphabetic() || c == '_' {
            let word = lexer.word();
            match (word.as_str(), lexer.peek(0)) {
                ("r" | "br" | "cr", Some('#' | '"')) if lexer.raw_string_ahead() => {
                    let text = lexer.raw_string()?;
                    tokens.push(Token {
                        kind: TokenKind::Str(text),
                        line,
                    });
                }
                ("r", Some('#')) => {
                    lexer.bump();
                    let raw = lexer.word();
                    tokens.push(Token {
                        kind: TokenKind::Ident(raw),
                        line,
                    });
                }
                ("b" | "c", Some('"')) => {
                    let text = lexer.quoted_string()?;
                    tokens.push(Token {
                        kind: TokenKind::Str(text),
                        line,
                    });
                }
                ("b", Some('\'')) => lexer.char_or_lifetime()?,
                _ => tokens.push(Token {
                    kind: TokenKind::Ident(word),
                    line,
                }),
            }
        } else if c == ':' && lexer.peek(1) == Some(':') {
            lexer.bump();
            lexer.bump();
            tokens.push(Token {
                kind: TokenKind::PathSep,
                line,
            });
        } else {
            lexer.bump();
            tokens.push(Token {
                kind: TokenKind::Punct(c),
                line,
            });
        }
    }
    Ok(tokens)
}

struct Lexer<'a> {
    chars: &'a [char],
    pos: usize,
    line: usize,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek(0).filter(|c| c.is_alphanumeric() || *c == '_') {
            word.push(c);
            self.bump();
        }
        word
    }

    fn block_comment(&mut self) -> Result<(), String> {
        let start = self.line;
        let mut depth = 0usize;
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some('/'), Some('*')) => {
                    depth += 1;
                    self.bump();
                    self.bump();
                }
                (Some('*'), Some('/')) => {
                    depth -= 1;
                    self.bump();
                    self.bump();
                    if depth == 0 {
                        return Ok(());
                    }
                }
                (Some(_), _) => {
                    self.bump();
                }
                (None, _) => return Err(format!("line {start}: unterminated block comment")),
            }
        }
    }

    /// At the opening `"`: reads to the closing quote, honouring backslash escapes.
    fn quoted_string(&mut self) -> Result<String, String> {
        let start = self.line;
        self.bump();
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('"') => return Ok(text),
                Some('\\') => {
                    if let Some(escaped) = self.bump() {
                        text.push('\\');
                        text.push(escaped);
                    }
                }
                Some(c) => text.push(c),
                None => return Err(format!("line {start}: unterminated string literal")),
            }
        }
    }

    /// After an `r`/`br`/`cr` prefix: is this `#*"` (a raw string) rather than `r#ident`?
    fn raw_string_ahead(&self) -> bool {
        let mut ahead = 0;
        while self.peek(ahead) == Some('#') {
            ahead += 1;
        }
        self.peek(ahead) == Some('"')
    }

    fn raw_string(&mut self) -> Result<String, String> {
        let start = self.line;
        let mut hashes = 0;
        while self.peek(0) == Some('#') {
            hashes += 1;
            self.bump();
        }
        self.bump(); // the opening quote
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('"') if (0..hashes).all(|i| self.peek(i) == Some('#')) => {
                    for _ in 0..hashes {
                        self.bump();
                    }
                    return Ok(text);
                }
                Some(c) => text.push(c),
                None => return Err(format!("line {start}: unterminated raw string literal")),
            }
        }
    }

    /// At a `'`: skips a char literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime/label (`'a`).
    fn char_or_lifetime(&mut self) -> Result<(), String> {
        let start = self.line;
        self.bump();
        match (self.peek(0), self.peek(1)) {
            (Some('\\'), _) => {
                self.bump();
                self.bump();
                while let Some(c) = self.bump() {
                    if c == '\'' {
                        return Ok(());
                    }
                    if c == '\n' {
                        break;
                    }
                }
                Err(format!("line {start}: unterminated char literal"))
            }
            (Some(_), Some('\'')) => {
                self.bump();
                self.bump();
                Ok(())
            }
            (Some(c), _) if c.is_alphabetic() || c == '_' => {
                self.word(); // a lifetime or a loop label: never part of a path
                Ok(())
            }
            _ => Err(format!("line {start}: stray quote")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokenize(source)
            .expect("lexes")
            .into_iter()
            .filter_map(|t| match t.kind {
                TokenKind::Ident(word) => Some(word),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_and_literals_hide_their_words() {
        let source = r####"
            // crate::hidden_a
            /* crate::hidden_b /* nested */ still hidden */
            let s = "crate::hidden_c \" crate::hidden_d";
            let r = r#"crate::hidden_e "quoted" "#;
            let b = b"hidden_f"; let c = 'x'; let q = '\''; let u = '\u{41}';
            fn f<'life>(x: &'life u8) -> Visible {}
        "####;
        let words = idents(source);
        assert!(words.iter().all(|w| !w.starts_with("hidden")), "{words:?}");
        assert!(!words.contains(&"life".to_string()), "{words:?}");
        assert!(words.contains(&"Visible".to_string()));
    }

    #[test]
    fn lines_are_counted_through_multiline_literals() {
        let tokens = tokenize("\"a\nb\"\n/*\n*/ word").expect("lexes");
        let last = tokens.last().expect("a token");
        assert_eq!(last.kind, TokenKind::Ident("word".into()));
        assert_eq!(last.line, 4);
    }

    #[test]
    fn unterminated_things_are_errors() {
        assert!(tokenize("let s = \"open").is_err());
        assert!(tokenize("/* open").is_err());
        assert!(tokenize("r#\"open\"").is_err());
    }
}
