-- A call history as aai-gateway wrote it with schema 3 (before duration sketches, with the indexes
-- calls_durations and calls_consent), dumped by sqlite3's iterdump: the migration test opens it with
-- today's code.
BEGIN TRANSACTION;
CREATE TABLE call_callers (
        hour TEXT NOT NULL, app TEXT NOT NULL, caller TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, caller)
    ) WITHOUT ROWID;
INSERT INTO "call_callers" VALUES('2026-11-20T09','dev.aai.echo','claude-code',4,0);
INSERT INTO "call_callers" VALUES('2026-11-20T10','dev.aai.echo','claude-code',5,1);
INSERT INTO "call_callers" VALUES('2026-11-20T11','aai.workflows','claude-code',1,0);
INSERT INTO "call_callers" VALUES('2026-11-20T11','dev.aai.echo','claude-code',5,0);
INSERT INTO "call_callers" VALUES('2026-11-20T11','org.example.notes','claude-code',1,0);
CREATE TABLE call_errors (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, error_type TEXT NOT NULL, calls INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool, error_type)
    ) WITHOUT ROWID;
INSERT INTO "call_errors" VALUES('2026-11-20T10','dev.aai.echo','fail','AUTOMATION_FAILED',1);
CREATE TABLE call_tools (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool)
    ) WITHOUT ROWID;
INSERT INTO "call_tools" VALUES('2026-11-20T09','dev.aai.echo','echo',4,0);
INSERT INTO "call_tools" VALUES('2026-11-20T10','dev.aai.echo','echo',4,0);
INSERT INTO "call_tools" VALUES('2026-11-20T10','dev.aai.echo','fail',1,1);
INSERT INTO "call_tools" VALUES('2026-11-20T11','aai.workflows','morning',1,0);
INSERT INTO "call_tools" VALUES('2026-11-20T11','dev.aai.echo','echo',5,0);
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
    , consent TEXT, parent TEXT, step TEXT);
INSERT INTO "calls" VALUES(1,'v3-0','2026-11-20T09:00:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,1.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(2,'v3-1','2026-11-20T09:15:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,2.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(3,'v3-2','2026-11-20T09:30:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,3.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(4,'v3-3','2026-11-20T09:45:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,4.0,'"hi"',0,'once',NULL,NULL);
INSERT INTO "calls" VALUES(5,'v3-4','2026-11-20T10:00:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,5.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(6,'v3-5','2026-11-20T10:15:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,6.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(7,'v3-6','2026-11-20T10:30:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,7.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(8,'v3-7','2026-11-20T10:45:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,8.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(9,'v3-8','2026-11-20T11:00:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,9.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(10,'v3-9','2026-11-20T11:15:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,10.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(11,'v3-10','2026-11-20T11:30:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,11.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(12,'v3-11','2026-11-20T11:45:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,12.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(13,'v3-20','2026-11-20T10:05:00.000+00:00','claude-code','stdio','dev.aai.echo','fail','{"text": "hi"}','error',-32001,'AUTOMATION_FAILED','nope',2.25,NULL,0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(14,'v3-21','2026-11-20T11:10:00.000+00:00','claude-code','stdio','org.example.notes','add','{"text": "hi"}','ok',NULL,NULL,NULL,10.0,'"hi"',0,'tool',NULL,NULL);
INSERT INTO "calls" VALUES(15,'v3-22','2026-11-20T11:20:00.000+00:00','claude-code','stdio','aai.workflows','morning','{"text": "hi"}','ok',NULL,NULL,NULL,30.0,'"hi"',0,NULL,NULL,NULL);
INSERT INTO "calls" VALUES(16,'v3-23','2026-11-20T11:21:00.000+00:00','claude-code','stdio','dev.aai.echo','echo','{"text": "hi"}','ok',NULL,NULL,NULL,0.5,'"hi"',0,NULL,'v3-22','first');
CREATE TABLE counted (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
INSERT INTO "counted" VALUES(1,16);
CREATE INDEX calls_time ON calls (time);
CREATE INDEX calls_app_time ON calls (app, time);
CREATE INDEX calls_caller_time ON calls (caller, time);
CREATE INDEX calls_durations ON calls (app, tool, duration_ms, time);
CREATE INDEX calls_consent ON calls (time, consent) WHERE consent IS NOT NULL;
CREATE INDEX calls_parent ON calls (parent, time) WHERE parent IS NOT NULL;
COMMIT;
PRAGMA user_version = 3;
