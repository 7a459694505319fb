//! Statements in other languages than English: detected one statement at a time (an agent
//! writes its summary in the user's language and keeps code, paths and commit subjects in
//! English), stemmed with that language's Snowball stemmer, and read with that language's
//! cue words.
//!
//! Detection is `whatlang` (trigram models built in, no data to load, an allowlist of the
//! languages Snowball stems and the corpora show), kept only when it is reliable; anything
//! else reads as English, the judge's default. Chinese has no Snowball stemmer and no spaces:
//! its cues are matched as substrings. A commitment is written in English, so a statement in
//! another language meets it through what both share — identifiers, paths, loanwords ("Git
//! Flow", "scripts", "documentation") — and the foreign stems are added to the English ones,
//! never replacing them.

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;
use whatlang::{Detector, Lang};

/// A language the judge reads besides English.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    English,
    French,
    Italian,
    Spanish,
    German,
    Russian,
    Chinese,
}

/// Every language with cue words of its own.
pub const ALL: &[Language] = &[
    Language::French,
    Language::Italian,
    Language::Spanish,
    Language::German,
    Language::Russian,
    Language::Chinese,
];

/// Cue words of one language: (completion, negation, hypothetical or proposal, deferral,
/// plan label, done label). Words are matched on their Snowball stem, Chinese as substrings.
struct CueWords {
    completion: &'static str,
    negation: &'static str,
    hypothetical: &'static str,
    deferral: &'static str,
    plan_label: &'static str,
    done_label: &'static str,
}

const FRENCH: CueWords = CueWords {
    completion: "implémenté implémentée ajouté ajoutée ajout terminé terminée fait faite corrigé \
        corrigée créé créée supprimé supprimée validé validée mis mise livré fusionné déployé \
        maintenant ok réussi passé",
    negation: "pas aucun aucune jamais rien ni sans",
    hypothetical: "peux pourrait pourrais pourrions si voulez veux souhaitez faudra devrait \
        propose suggère",
    deferral: "plus tard demain attente reste bloqué bloque reporté",
    plan_label: "prochain prochaine prochaines étape étapes options reste todo",
    done_label: "fait faite terminé ajout résumé changements modifications validation",
};

const ITALIAN: CueWords = CueWords {
    completion: "implementato implementata aggiunto aggiunta completato completata fatto \
        corretto creato rimosso aggiornato risolto",
    negation: "non nessun nessuna mai niente",
    hypothetical: "posso potrei potremmo se vuoi vuole dovrebbe",
    deferral: "dopo domani attesa bloccato rimandato",
    plan_label: "prossimi prossimo passi todo",
    done_label: "fatto completato riepilogo modifiche",
};

const SPANISH: CueWords = CueWords {
    completion: "implementado implementada añadido agregado completado hecho corregido creado \
        eliminado actualizado resuelto",
    negation: "no ningún ninguna nunca nada",
    hypothetical: "puedo podría podríamos si quieres quiere debería",
    deferral: "después mañana pendiente bloqueado pospuesto",
    plan_label: "próximos próximo pasos pendiente",
    done_label: "hecho completado resumen cambios",
};

const GERMAN: CueWords = CueWords {
    completion: "implementiert hinzugefügt erledigt fertig behoben erstellt entfernt \
        aktualisiert abgeschlossen",
    negation: "nicht kein keine keinen nie nichts",
    hypothetical: "kann könnte könnten wenn falls soll sollte möchtest",
    deferral: "später morgen offen blockiert verschoben",
    plan_label: "nächste schritte offen todo",
    done_label: "erledigt zusammenfassung änderungen",
};

const RUSSIAN: CueWords = CueWords {
    completion: "реализовано реализован добавлено добавлен исправлено исправлен сделано готово \
        создан создано удалено обновлено завершено",
    negation: "не нет никогда ничего",
    hypothetical: "могу могли если хотите хочешь следует",
    deferral: "позже завтра ожидание заблокировано отложено",
    plan_label: "следующие шаги план",
    done_label: "сделано итог изменения",
};

const CHINESE: CueWords = CueWords {
    completion: "已完成 完成 已添加 新增 已修复 修复 已实现 实现了 已更新 改为 通过 已删除 已创建",
    negation: "未 没有 不是 无法 不能",
    hypothetical: "需要我 我可以 可以 是否 如果 建议 吗",
    deferral: "稍后 待定 阻塞 暂缓",
    plan_label: "下一步 后续 建议 待办 计划",
    done_label: "已完成 完成 变更 总结 修改",
};

fn cue_words(language: Language) -> Option<&'static CueWords> {
    match language {
        Language::English => None,
        Language::French => Some(&FRENCH),
        Language::Italian => Some(&ITALIAN),
        Language::Spanish => Some(&SPANISH),
        Language::German => Some(&GERMAN),
        Language::Russian => Some(&RUSSIAN),
        Language::Chinese => Some(&CHINESE),
    }
}

fn algorithm(language: Language) -> Option<Algorithm> {
    match language {
        Language::English => Some(Algorithm::English),
        Language::French => Some(Algorithm::French),
        Language::Italian => Some(Algorithm::Italian),
        Language::Spanish => Some(Algorithm::Spanish),
        Language::German => Some(Algorithm::German),
        Language::Russian => Some(Algorithm::Russian),
        Language::Chinese => None,
    }
}

fn detector() -> &'static Detector {
    static DETECTOR: OnceLock<Detector> = OnceLock::new();
    DETECTOR.get_or_init(|| {
        Detector::with_allowlist(vec![
            Lang::Eng,
            Lang::Fra,
            Lang::Ita,
            Lang::Spa,
            Lang::Deu,
            Lang::Rus,
            Lang::Cmn,
        ])
    })
}

/// The statement's language; English unless another is reliably detected (or the text is
/// mostly Han characters, which only Chinese is here).
pub fn detect(text: &str) -> Language {
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    let han = letters
        .iter()
        .filter(|c| ('\u{4e00}'..='\u{9fff}').contains(*c))
        .count();
    if han * 3 >= letters.len().max(1) && han > 0 {
        return Language::Chinese;
    }
    // Too short to tell; trigram detection needs a few words.
    if text.unicode_words().count() < 4 {
        return Language::English;
    }
    match detector().detect(text) {
        Some(info) if info.is_reliable() => match info.lang() {
            Lang::Fra => Language::French,
            Lang::Ita => Language::Italian,
            Lang::Spa => Language::Spanish,
            Lang::Deu => Language::German,
            Lang::Rus => Language::Russian,
            Lang::Cmn => Language::Chinese,
            _ => Language::English,
        },
        _ => Language::English,
    }
}

/// The stems of a statement's words in its own language (none for English, whose stems the
/// judge already has, and for Chinese).
pub fn stems(text: &str, language: Language) -> HashSet<String> {
    if language == Language::English {
        return HashSet::new();
    }
    let Some(algorithm) = algorithm(language) else {
        return HashSet::new();
    };
    let stemmer = Stemmer::create(algorithm);
    text.to_lowercase()
        .unicode_words()
        .filter(|word| word.chars().count() > 2)
        .map(|word| stemmer.stem(word).into_owned())
        .collect()
}

/// What a statement's language-specific cue words say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cues {
    pub completion: bool,
    pub negation: bool,
    pub hypothetical: bool,
    pub deferral: bool,
    pub plan_label: bool,
    pub done_label: bool,
}

fn any_cue(text: &str, language: Language, list: &str) -> bool {
    let lowered = text.to_lowercase();
    if language == Language::Chinese {
        return list.split_whitespace().any(|cue| lowered.contains(cue));
    }
    let Some(algorithm) = algorithm(language) else {
        return false;
    };
    let stemmer = Stemmer::create(algorithm);
    let wanted: HashSet<String> = list
        .split_whitespace()
        .map(|cue| stemmer.stem(cue).into_owned())
        .collect();
    lowered
        .unicode_words()
        .any(|word| wanted.contains(stemmer.stem(word).as_ref()))
}

/// The cue words of a statement in `language` (nothing for English: see `cues`).
pub fn cues(text: &str, language: Language) -> Cues {
    let Some(words) = cue_words(language) else {
        return Cues::default();
    };
    Cues {
        completion: any_cue(text, language, words.completion),
        negation: any_cue(text, language, words.negation),
        hypothetical: any_cue(text, language, words.hypothetical),
        deferral: any_cue(text, language, words.deferral),
        plan_label: any_cue(text, language, words.plan_label),
        done_label: any_cue(text, language, words.done_label),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_statement_is_read_in_its_own_language() {
        let table = [
            (
                "Parfait, Edouard — Git Flow est maintenant implémenté dans ton projet.",
                Language::French,
            ),
            ("已完成变更：版本一致化与元数据", Language::Chinese),
            (
                "Ho aggiunto i test e aggiornato la documentazione del progetto.",
                Language::Italian,
            ),
            (
                "Added the flag and updated the docs for the new release.",
                Language::English,
            ),
            ("`scripts/git-flow.sh` OK", Language::English),
        ];
        for (text, expected) in table {
            assert_eq!(detect(text), expected, "{text}");
        }
    }

    #[test]
    fn cue_words_are_read_per_language() {
        let table = [
            (
                "Git Flow est maintenant implémenté dans ton projet.",
                Language::French,
                Cues {
                    completion: true,
                    ..Cues::default()
                },
            ),
            (
                "Je peux exécuter `gitflow:init` maintenant pour créer `develop`.",
                Language::French,
                Cues {
                    completion: true,
                    hypothetical: true,
                    ..Cues::default()
                },
            ),
            (
                "测试 `tests/test_config_basic.py` 本地运行 1/1 通过。",
                Language::Chinese,
                Cues {
                    completion: true,
                    ..Cues::default()
                },
            ),
            (
                "需要我进一步加一个开关吗？",
                Language::Chinese,
                Cues {
                    hypothetical: true,
                    ..Cues::default()
                },
            ),
            (
                "Le déploiement n'est pas terminé.",
                Language::French,
                Cues {
                    completion: true,
                    negation: true,
                    ..Cues::default()
                },
            ),
        ];
        // Label words are checked on labels only; here, what a sentence says.
        let claim = |cues: Cues| {
            (
                cues.completion,
                cues.negation,
                cues.hypothetical,
                cues.deferral,
            )
        };
        for (text, language, expected) in table {
            assert_eq!(claim(cues(text, language)), claim(expected), "{text}");
        }
    }

    #[test]
    fn foreign_words_are_stemmed_with_their_own_stemmer() {
        let found = stems("Ajout de la documentation des scripts", Language::French);
        assert!(found.contains("document"), "{found:?}");
        assert!(found.contains("script"), "{found:?}");
        assert!(stems("Added the docs", Language::English).is_empty());
    }
}
