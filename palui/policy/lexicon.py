"""The English and Portuguese words inference reads, with their word forms.

Every verb is listed once, by its base form, and its forms are generated here, so a token is
looked up exactly (no stemming that could turn an unrelated word into a verb). Each changing verb
has a strength that says how far its spelling can be trusted to mean the verb:

- strong: almost always the verb ("delete", "enviar"); counts wherever it appears;
- nounish: often a noun ("post", "update", "schedule"); not counted as the object of a reading
  verb ("list_posts") or right after an article ("the latest updates");
- weak: often not a verb at all in prose ("set", "run", "clear"); in a description it counts only
  where a verb stands (start of a sentence, after "and", "to", "can", ...).

A word that is mostly a noun in tool definitions (log, label, tag, note, message, email, record,
order) is not listed: leaving a changing word out cannot make a tool `read`, because `read`
needs the name's own verb to be a listed reading verb (`own_verb`: `email_contact` has none) and
no sign of change, while listing it would class many reads as writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class Effect(StrEnum):
    READ = "read"
    WRITE = "write"
    SEND = "send"  # a write that reaches someone or somewhere
    DESTRUCTIVE = "destructive"


class Strength(StrEnum):
    STRONG = "strong"
    NOUNISH = "nounish"
    WEAK = "weak"


class Form(StrEnum):
    BASE = "base"  # delete, apagar, apaga, apague
    S = "s"  # deletes, apagam
    ING = "ing"  # deleting, apagando
    ED = "ed"  # deleted, apagado, apagou


@dataclass(frozen=True, slots=True)
class Word:
    lemma: str
    effect: Effect
    strength: Strength
    form: Form


_S, _N, _W = Strength.STRONG, Strength.NOUNISH, Strength.WEAK

# (effect, strength) -> base forms
_ENGLISH: dict[tuple[Effect, Strength], str] = {
    (Effect.READ, _S): "list get search find read fetch show count describe lookup look query "
    "view retrieve inspect browse preview peek display check verify validate compare analyze "
    "analyse calculate compute estimate summarize summarise",
    (Effect.WRITE, _S): "create add insert upsert write save append prepend modify rename replace "
    "generate restore reopen enable disable install register unregister subscribe unsubscribe "
    "approve reject accept decline confirm assign unassign attach detach configure deploy "
    "execute exec invoke restart unlock ban unban mute unmute unblock increment decrement "
    "toggle remember memorize compose dismiss pay buy purchase reserve initialize init dispatch "
    "repair upgrade downgrade migrate provision rotate disconnect unhide withdraw unmount "
    "chmod chown mkdir upvote downvote kick unarchive undo redo",
    (Effect.WRITE, _N): "update edit schedule move upload download draft copy duplicate clone "
    "fork import export archive backup commit release merge push build trigger resume "
    "change patch star pin grant block transfer charge refund comment deposit flag hide "
    "authorize submit checkout snooze spawn mount vote",
    (Effect.WRITE, _W): "set put run start stop pause close lock mark apply complete finish "
    "resolve sync switch scale sign join touch fix",
    (Effect.SEND, _S): "send notify publish invite announce respond",
    (Effect.SEND, _N): "post reply share forward broadcast tweet",
    (Effect.DESTRUCTIVE, _S): "delete remove destroy purge erase wipe revoke cancel terminate "
    "reset overwrite forget uninstall unlink rm rmdir del discard expunge shred nuke obliterate "
    "evict abort rollback revert deprovision decommission permanently irreversible "
    "irreversibly",
    (Effect.DESTRUCTIVE, _N): "trash",
    (Effect.DESTRUCTIVE, _W): "drop clear flush kill truncate clean",
}

_PORTUGUESE: dict[tuple[Effect, Strength], str] = {
    (Effect.READ, _S): "listar buscar procurar obter ler consultar mostrar ver pesquisar exibir "
    "visualizar verificar contar localizar encontrar conferir calcular comparar "
    "descrever analisar",
    (Effect.WRITE, _S): "criar adicionar atualizar editar salvar gravar escrever alterar modificar "
    "inserir renomear substituir anexar cadastrar executar instalar restaurar sincronizar "
    "atribuir mudar aprovar rejeitar habilitar desabilitar bloquear desbloquear duplicar "
    "transferir pagar confirmar memorizar gerar mover corrigir consertar submeter migrar "
    "desconectar ocultar esconder votar expulsar banir desarquivar reiniciar aceitar recusar",
    (Effect.WRITE, _N): "agendar registrar reservar comprar exportar baixar copiar arquivar",
    (Effect.WRITE, _W): "definir marcar iniciar parar rodar fechar concluir aplicar colocar "
    "ativar desativar importar pausar finalizar assinar",
    (Effect.SEND, _S): "enviar publicar compartilhar responder encaminhar notificar avisar "
    "convidar mandar postar transmitir divulgar",
    (Effect.SEND, _W): "disparar",
    (Effect.DESTRUCTIVE, _S): "apagar excluir deletar remover destruir cancelar revogar esquecer "
    "eliminar descartar expurgar sobrescrever desinstalar resetar zerar encerrar reverter "
    "permanentemente irreversivel irreversivelmente",
    (Effect.DESTRUCTIVE, _W): "limpar truncar",
}


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DOUBLING = word_set(
    "stop drop set get put run pin star ban unban commit submit forget reset shred flag"
)
_EN_IRREGULAR: dict[str, tuple[str, ...]] = {
    "send": ("sent",),
    "write": ("wrote", "written"),
    "overwrite": ("overwrote", "overwritten"),
    "forget": ("forgot", "forgotten"),
    "get": ("got", "gotten"),
    "find": ("found",),
    "read": ("read",),
    "show": ("showed", "shown"),
    "run": ("ran", "run"),
    "set": ("set",),
    "put": ("put",),
    "reset": ("reset",),
    "broadcast": ("broadcast", "broadcasted"),
    "buy": ("bought",),
    "pay": ("paid",),
    "build": ("built",),
    "cancel": ("cancelled", "canceled"),
    "undo": ("undid", "undone"),
    "redo": ("redid", "redone"),
    "hide": ("hid", "hidden"),
    "withdraw": ("withdrew", "withdrawn"),
}
_EN_EXTRA_ING = {"cancel": ("cancelling", "canceling")}
_NO_FORMS = word_set(
    "rm rmdir del exec init lookup mkdir chmod chown permanently irreversible irreversibly"
)

# Portuguese spellings that are far more often another word: "para" (for, not "stops"),
# "publica" (public), "ativa" (active), "conta" (account), "contem" (contains), "baixa" (low).
_PT_NOT_VERBS = word_set(
    "para paras publica publicas ativa ativas conta contas contem baixa baixas"
)
# Verbs too short or irregular to conjugate by rule: only these spellings.
_PT_ONLY: dict[str, dict[str, Form]] = {
    "ler": {
        "ler": Form.BASE,
        "leia": Form.BASE,
        "leiam": Form.S,
        "lendo": Form.ING,
        "lido": Form.ED,
    },
    "ver": {"ver": Form.BASE, "veja": Form.BASE, "vejam": Form.S},
}
_PT_EXTRA: dict[str, dict[str, Form]] = {
    "obter": {
        "obter": Form.BASE,
        "obtem": Form.BASE,
        "obtenha": Form.BASE,
        "obtendo": Form.ING,
        "obtido": Form.ED,
        "obtida": Form.ED,
        "obteve": Form.ED,
    },
    "destruir": {"destroi": Form.BASE, "destroem": Form.S},
    "escrever": {"escrito": Form.ED, "escrita": Form.ED},
    "sobrescrever": {"sobrescrito": Form.ED},
    "descrever": {"descrito": Form.ED},
}


def english_forms(base: str) -> dict[str, Form]:
    forms = {base: Form.BASE}
    if base in _NO_FORMS:
        return forms
    if base.endswith("e") and not base.endswith("ee"):
        s, ed, ing = base + "s", base + "d", base[:-1] + "ing"
    elif base.endswith("y") and base[-2] not in "aeiou":
        s, ed, ing = base[:-1] + "ies", base[:-1] + "ied", base + "ing"
    elif base.endswith(("s", "sh", "ch", "x", "z")):
        s, ed, ing = base + "es", base + "ed", base + "ing"
    elif base in _DOUBLING:
        s, ed, ing = base + "s", base + base[-1] + "ed", base + base[-1] + "ing"
    else:
        s, ed, ing = base + "s", base + "ed", base + "ing"
    forms[s] = Form.S
    forms[ing] = Form.ING
    for past in _EN_IRREGULAR.get(base, (ed,)):
        forms.setdefault(past, Form.ED)
    for extra in _EN_EXTRA_ING.get(base, ()):
        forms[extra] = Form.ING
    return forms


def portuguese_forms(infinitive: str) -> dict[str, Form]:
    if infinitive in _PT_ONLY:
        return dict(_PT_ONLY[infinitive])
    if infinitive[-2:] not in ("ar", "er", "ir"):  # an adverb or adjective: no forms
        return {infinitive: Form.BASE}
    stem, ending = infinitive[:-2], infinitive[-2:]
    vowel = ending[0]
    soft = stem  # the stem before e (buscar -> busque, apagar -> apague)
    if ending == "ar" and stem.endswith("c"):
        soft = stem[:-1] + "qu"
    elif ending == "ar" and stem.endswith("g"):
        soft = stem + "u"
    forms: dict[str, Form] = {infinitive: Form.BASE}
    if ending == "ar":
        # -ear verbs take an i in the present: bloquear -> bloqueia, bloqueie.
        present = (stem + "ia", stem + "ie") if stem.endswith("e") else (stem + "a", soft + "e")
        forms.update(dict.fromkeys(present, Form.BASE))
        forms.update({present[0] + "m": Form.S, present[1] + "m": Form.S})
        forms[stem + "ando"] = Form.ING
        past: tuple[str, ...] = ("ado", "ada", "ados", "adas", "ou", "aram")
    else:
        # -uir verbs: exclui, excluem; the rest: escreve, escrevem.
        third = stem + "i" if ending == "ir" and stem.endswith("u") else stem + "e"
        forms.update({third: Form.BASE, stem + "a": Form.BASE})
        forms.update({stem + "em": Form.S, stem + "am": Form.S})
        forms[stem + ("endo" if vowel == "e" else "indo")] = Form.ING
        past = ("ido", "ida", "idos", "idas", "eu" if vowel == "e" else "iu", vowel + "ram")
    forms.update(dict.fromkeys((stem + p for p in past), Form.ED))
    forms.update(_PT_EXTRA.get(infinitive, {}))
    return {form: kind for form, kind in forms.items() if form not in _PT_NOT_VERBS}


def _build() -> Mapping[str, Word]:
    table: dict[str, Word] = {}

    def add(groups: Mapping[tuple[Effect, Strength], str], forms_of: object) -> None:
        for (effect, strength), words in groups.items():
            for lemma in words.split():
                for form, kind in forms_of(lemma).items():  # type: ignore[operator]
                    _keep_stricter(table, form, Word(lemma, effect, strength, kind))

    add(_ENGLISH, english_forms)
    add(_PORTUGUESE, portuguese_forms)
    return MappingProxyType(table)


_EFFECT_RANK = {Effect.READ: 0, Effect.WRITE: 1, Effect.SEND: 2, Effect.DESTRUCTIVE: 3}
_STRENGTH_RANK = {Strength.WEAK: 0, Strength.NOUNISH: 1, Strength.STRONG: 2}


def _keep_stricter(table: dict[str, Word], form: str, word: Word) -> None:
    # "move" is an English noun-verb and a Portuguese verb: the cautious reading wins.
    old = table.get(form)
    key = (_EFFECT_RANK[word.effect], _STRENGTH_RANK[word.strength])
    if old is None or key > (_EFFECT_RANK[old.effect], _STRENGTH_RANK[old.strength]):
        table[form] = word


WORDS: Mapping[str, Word] = _build()


def lemmas(effects: Iterable[Effect]) -> list[str]:
    """Every base form with one of these effects (for tests and drafting)."""
    wanted = set(effects)
    return sorted({w.lemma for w in WORDS.values() if w.effect in wanted})
