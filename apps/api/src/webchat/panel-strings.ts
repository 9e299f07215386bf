/**
 * The chat panel's own words, per language. The page carries only the visitor's language:
 * `?lang=` when the embedding page names one we have, else the best of the browser's
 * `Accept-Language` (its `navigator.languages`), else English. `{name}` and `{status}` are
 * filled in by the page. A new language is a new entry here, and `rtl` for a script
 * written right to left.
 */
export interface PanelStrings {
  messages: string;
  placeholder: string;
  messageLabel: string;
  send: string;
  composer: string;
  end: string;
  endTitle: string;
  ended: string;
  reconnecting: string;
  offline: string;
  typing: string;
  typingAnyone: string;
  you: string;
  delivered: string;
  read: string;
  details: string;
  prechatIntro: string;
  name: string;
  email: string;
  optional: string;
  start: string;
  nameRequired: string;
  emailRequired: string;
  emailInvalid: string;
  error: string;
  notSent: string;
}

const en: PanelStrings = {
  messages: "Messages",
  placeholder: "Write a message",
  messageLabel: "Message",
  send: "Send",
  composer: "Send a message",
  end: "End chat",
  endTitle: "End this chat and forget it on this device",
  ended: "Chat ended.",
  reconnecting: "Reconnecting…",
  offline: "You are offline. The chat will reconnect when the connection is back.",
  typing: "{name} is typing…",
  typingAnyone: "Someone is typing…",
  you: "You",
  delivered: "Delivered",
  read: "Read",
  details: "Your details",
  prechatIntro: "Before we start, tell us who you are.",
  name: "Name",
  email: "Email",
  optional: "(optional)",
  start: "Start chat",
  nameRequired: "Please enter your name.",
  emailRequired: "Please enter your email address.",
  emailInvalid: "Please enter a valid email address.",
  error: "Something went wrong ({status}).",
  notSent: "Your message was not sent. Check your connection and try again.",
};

const fr: PanelStrings = {
  messages: "Messages",
  placeholder: "Écrivez un message",
  messageLabel: "Message",
  send: "Envoyer",
  composer: "Envoyer un message",
  end: "Terminer",
  endTitle: "Terminer cette conversation et l’oublier sur cet appareil",
  ended: "Conversation terminée.",
  reconnecting: "Reconnexion…",
  offline: "Vous êtes hors ligne. La conversation reprendra au retour de la connexion.",
  typing: "{name} écrit…",
  typingAnyone: "Quelqu’un écrit…",
  you: "Vous",
  delivered: "Distribué",
  read: "Lu",
  details: "Vos coordonnées",
  prechatIntro: "Avant de commencer, présentez-vous.",
  name: "Nom",
  email: "E-mail",
  optional: "(facultatif)",
  start: "Commencer",
  nameRequired: "Indiquez votre nom.",
  emailRequired: "Indiquez votre adresse e-mail.",
  emailInvalid: "Cette adresse e-mail n’est pas valide.",
  error: "Une erreur est survenue ({status}).",
  notSent: "Message non envoyé. Vérifiez votre connexion et réessayez.",
};

const es: PanelStrings = {
  messages: "Mensajes",
  placeholder: "Escribe un mensaje",
  messageLabel: "Mensaje",
  send: "Enviar",
  composer: "Enviar un mensaje",
  end: "Terminar chat",
  endTitle: "Terminar este chat y olvidarlo en este dispositivo",
  ended: "Chat terminado.",
  reconnecting: "Reconectando…",
  offline: "Sin conexión. El chat se reconectará cuando vuelva la conexión.",
  typing: "{name} está escribiendo…",
  typingAnyone: "Alguien está escribiendo…",
  you: "Tú",
  delivered: "Entregado",
  read: "Leído",
  details: "Tus datos",
  prechatIntro: "Antes de empezar, dinos quién eres.",
  name: "Nombre",
  email: "Correo electrónico",
  optional: "(opcional)",
  start: "Empezar chat",
  nameRequired: "Escribe tu nombre.",
  emailRequired: "Escribe tu correo electrónico.",
  emailInvalid: "El correo electrónico no es válido.",
  error: "Algo salió mal ({status}).",
  notSent: "El mensaje no se envió. Revisa tu conexión e inténtalo de nuevo.",
};

const de: PanelStrings = {
  messages: "Nachrichten",
  placeholder: "Nachricht schreiben",
  messageLabel: "Nachricht",
  send: "Senden",
  composer: "Nachricht senden",
  end: "Chat beenden",
  endTitle: "Diesen Chat beenden und auf diesem Gerät vergessen",
  ended: "Chat beendet.",
  reconnecting: "Verbindung wird wiederhergestellt…",
  offline: "Sie sind offline. Der Chat verbindet sich wieder, sobald die Verbindung zurück ist.",
  typing: "{name} schreibt…",
  typingAnyone: "Jemand schreibt…",
  you: "Sie",
  delivered: "Zugestellt",
  read: "Gelesen",
  details: "Ihre Angaben",
  prechatIntro: "Bevor es losgeht: Wer sind Sie?",
  name: "Name",
  email: "E-Mail",
  optional: "(optional)",
  start: "Chat starten",
  nameRequired: "Bitte geben Sie Ihren Namen ein.",
  emailRequired: "Bitte geben Sie Ihre E-Mail-Adresse ein.",
  emailInvalid: "Bitte geben Sie eine gültige E-Mail-Adresse ein.",
  error: "Etwas ist schiefgelaufen ({status}).",
  notSent: "Die Nachricht wurde nicht gesendet. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut.",
};

const ar: PanelStrings = {
  messages: "الرسائل",
  placeholder: "اكتب رسالة",
  messageLabel: "الرسالة",
  send: "إرسال",
  composer: "إرسال رسالة",
  end: "إنهاء المحادثة",
  endTitle: "إنهاء هذه المحادثة ونسيانها على هذا الجهاز",
  ended: "انتهت المحادثة.",
  reconnecting: "جارٍ إعادة الاتصال…",
  offline: "أنت غير متصل. ستُستأنف المحادثة عند عودة الاتصال.",
  typing: "{name} يكتب…",
  typingAnyone: "أحدهم يكتب…",
  you: "أنت",
  delivered: "تم التسليم",
  read: "تمت القراءة",
  details: "بياناتك",
  prechatIntro: "قبل أن نبدأ، عرّفنا بنفسك.",
  name: "الاسم",
  email: "البريد الإلكتروني",
  optional: "(اختياري)",
  start: "بدء المحادثة",
  nameRequired: "يرجى إدخال اسمك.",
  emailRequired: "يرجى إدخال بريدك الإلكتروني.",
  emailInvalid: "يرجى إدخال بريد إلكتروني صحيح.",
  error: "حدث خطأ ({status}).",
  notSent: "لم تُرسل الرسالة. تحقق من اتصالك وحاول مرة أخرى.",
};

export interface PanelLocale {
  /** BCP 47 language, as `<html lang>` takes it. */
  lang: string;
  dir: "ltr" | "rtl";
  strings: PanelStrings;
}

const LOCALES: Record<string, PanelLocale> = {
  en: { lang: "en", dir: "ltr", strings: en },
  fr: { lang: "fr", dir: "ltr", strings: fr },
  es: { lang: "es", dir: "ltr", strings: es },
  de: { lang: "de", dir: "ltr", strings: de },
  ar: { lang: "ar", dir: "rtl", strings: ar },
};

export const PANEL_LANGUAGES = Object.keys(LOCALES);

/** The primary language subtag we have a translation for, or undefined. */
function known(tag: string): PanelLocale | undefined {
  const primary = tag.trim().toLowerCase().split(/[-_]/)[0] ?? "";
  return Object.hasOwn(LOCALES, primary) ? LOCALES[primary] : undefined;
}

/**
 * `?lang=` first (the embedding site knows its page's language), then `Accept-Language` by
 * its q-values (ties in the browser's order), then English.
 */
export function panelLocale(requested: unknown, acceptLanguage: string | undefined): PanelLocale {
  if (typeof requested === "string" && requested.length <= 35) {
    const chosen = known(requested);
    if (chosen) return chosen;
  }
  const ranked = (acceptLanguage ?? "")
    .slice(0, 1000)
    .split(",")
    .map((part, index) => {
      const [tag = "", ...params] = part.split(";");
      const q = params.map((param) => /^\s*q=([0-9.]+)\s*$/.exec(param)?.[1]).find(Boolean);
      return { tag, q: q === undefined ? 1 : Number(q), index };
    })
    .filter((entry) => entry.q > 0 && entry.tag.trim() !== "*")
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const entry of ranked) {
    const chosen = known(entry.tag);
    if (chosen) return chosen;
  }
  return LOCALES.en as PanelLocale;
}
