-- A call history as aai-gateway wrote it with schema 2 (before runs and their steps), dumped by sqlite3's
-- iterdump: the migration test opens it with today's code.
BEGIN TRANSACTION;
CREATE TABLE call_callers (
        hour TEXT NOT NULL, app TEXT NOT NULL, caller TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, caller)
    ) WITHOUT ROWID;
INSERT INTO "call_callers" VALUES('2026-11-20T09','dev.aai.echo','claude-code',1,0);
INSERT INTO "call_callers" VALUES('2026-11-20T09','dev.aai.echo','cli',1,1);
INSERT INTO "call_callers" VALUES('2026-11-20T11','org.example.notes','claude-code',1,0);
CREATE TABLE call_errors (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, error_type TEXT NOT NULL, calls INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool, error_type)
    ) WITHOUT ROWID;
INSERT INTO "call_errors" VALUES('2026-11-20T09','dev.aai.echo','fail','AUTOMATION_FAILED',1);
CREATE TABLE call_tools (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool)
    ) WITHOUT ROWID;
INSERT INTO "call_tools" VALUES('2026-11-20T09','dev.aai.echo','echo',1,0);
INSERT INTO "call_tools" VALUES('2026-11-20T09','dev.aai.echo','fail',1,1);
INSERT INTO "call_tools" VALUES('2026-11-20T11','org.example.notes','add',1,0);
CREATE TABLE calls (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        time TEXT NOT NULL,
        caller TEXT NOT NULL,
        transport TEXT NOT NULL,
        app TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
        error_code INTEGER,
        error_type TEXT,
        error_detail TEXT,
        duration_ms REAL NOT NULL,
        result TEXT,
        result_truncated INTEGER NOT NULL DEFAULT 0
    , consent TEXT);
INSERT INTO "calls" VALUES(1,'v2-ok','2026-11-20T09:00:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,1.5,'"hi"',0,NULL);
INSERT INTO "calls" VALUES(2,'v2-failed','2026-11-20T09:05:00.000+00:00','cli','cli','dev.aai.echo','fail','{"message": "nope"}','error',-32001,'AUTOMATION_FAILED','nope',2.25,NULL,0,NULL);
INSERT INTO "calls" VALUES(3,'v2-asked','2026-11-20T11:00:00.000+00:00','claude-code','stdio','org.example.notes','add','{"title": "x"}','ok',NULL,NULL,NULL,10.0,'{"id": 1}',0,'tool');
CREATE TABLE counted (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
INSERT INTO "counted" VALUES(1,3);
CREATE INDEX calls_time ON calls (time);
CREATE INDEX calls_app_time ON calls (app, time);
CREATE INDEX calls_caller_time ON calls (caller, time);
CREATE INDEX calls_durations ON calls (app, tool, duration_ms, time);
CREATE INDEX calls_consent ON calls (time, consent) WHERE consent IS NOT NULL;
COMMIT;
PRAGMA user_version = 2;
