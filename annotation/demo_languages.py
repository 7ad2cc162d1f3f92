"""The demo's languages study: the rater's pages in German (Study.language) and items written right to
left (Arabic and Hebrew hotel reviews with their replies), rated with the RRGen rubric, whose own
texts stay as written. Shows the translated workspace and the right-to-left layout (dir="auto" on
every text block), and a participant phase in German: the study's own instructions and comprehension
check around the platform's translated texts (heading, attention policy, buttons, errors)."""

from __future__ import annotations

import json

from annotation.models import Study, StudyMember
from annotation.services.items import items_import
from annotation.services.phases import study_phases_update
from annotation.services.studies import study_create, study_members_add, study_set_status

SLUG = "demo-languages"
# The study's own texts, written in German like its interface (the platform translates only its own).
PHASES = {
    "instructions": {
        "text": "Lesen Sie die Bewertung des Gastes und jede Antwort des Hotels ganz. Bewerten Sie, ob die Antwort "
                "auf die genannten Punkte eingeht. Arabische und hebräische Texte laufen von rechts nach links.",
        "check": [{"key": "punkte", "text": "Worauf achten Sie vor allem?", "kind": "single",
                   "options": ["Länge der Antwort", "Eingehen auf die genannten Punkte"],
                   "correct": "Eingehen auf die genannten Punkte"}]},
    "attention_policy": {"reject_after_failed": 2},
}

ITEMS = [
    {"id": "ar-001", "context": "أقمنا ثلاث ليالٍ في غرفة مطلة على البحر. كان المنظر رائعًا، لكن المكيف كان صاخبًا طوال الليل "
                                "ولم يأتِ أحد لإصلاحه رغم اتصالين بالاستقبال.",
     "outputs": [{"system": "rrgen-lstm", "content": "شكرًا على تقييمك. يسعدنا أن المنظر أعجبك، ونعتذر عن إزعاج المكيف؛ "
                                                    "طلبنا من فريق الصيانة فحص الغرف المطلة على البحر."},
                 {"system": "rrgen-transformer", "content": "شكرًا لك. نأمل أن نراك مرة أخرى."},
                 {"system": "rrgen-gpt", "content": "نعتذر بصدق عن الليالي المزعجة وعن عدم الرد على اتصالاتك. "
                                                    "تم استبدال وحدة التكييف في غرفتك، وسنتواصل معك مباشرة."}]},
    {"id": "he-001", "context": "החדר היה נקי והצוות אדיב מאוד, אבל ארוחת הבוקר הייתה דלה והחניה יקרה מדי.",
     "outputs": [{"system": "rrgen-lstm", "content": "תודה רבה על הביקורת! שמחנו לשמוע שהחדר והצוות מצאו חן בעיניך."},
                 {"system": "rrgen-transformer", "content": "תודה. נשמח לראותך שוב."},
                 {"system": "rrgen-gpt", "content": "תודה על המשוב. אנו מרחיבים את מבחר ארוחת הבוקר ובוחנים מחדש "
                                                    "את מחירי החניה לאורחי המלון."}]},
    {"id": "mixed-001", "context": "Great location near the old city; the staff spoke Arabic and Hebrew, which helped a lot.",
     "outputs": [{"system": "rrgen-lstm", "content": "Thank you! We are glad the location suited you."},
                 {"system": "rrgen-transformer", "content": "شكرًا جزيلًا، يسعدنا أن فريقنا ساعدك."},
                 {"system": "rrgen-gpt", "content": "תודה רבה! הצוות שלנו ישמח לארח אותך שוב."}]},
]


def demo_languages_install(*, rubric_version, admin, annotators: list[str], researchers: list[str]) -> Study | None:
    """Create the study when missing (idempotent, like the rest of the demo)."""
    if Study.objects.filter(slug=SLUG).exists():
        return None
    study = study_create(name="Demo: Arabic and Hebrew reviews, German interface", slug=SLUG,
                         rubric_version=rubric_version, user=admin, language="de", raters_per_item=3,
                         presentation=Study.Presentation.SIDE_BY_SIDE)
    study_phases_update(study=study, user=admin, text=json.dumps(PHASES, ensure_ascii=False))
    items_import(study=study, text="".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ITEMS),
                 filename="languages.jsonl")
    study_members_add(study=study, usernames=annotators, role=StudyMember.Role.ANNOTATOR)
    study_members_add(study=study, usernames=researchers, role=StudyMember.Role.RESEARCHER)
    study_set_status(study=study, status=Study.Status.OPEN)
    return study
