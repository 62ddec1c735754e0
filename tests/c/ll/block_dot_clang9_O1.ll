; hpvm's own test program: an HPVM-C block dot product (each block of 32 instances loads
; a[g] * b[g] into its local scratch, halves the active instances round after round with
; __hpvm__barrier() between rounds, and instance 0 writes the block's sum) written as
; clang 9 -O1 -S -emit-llvm writes it with HPVM's hpvm.h, before GenHPVM: typed pointers,
; __hpvm__getNode() and __hpvm__barrier() unprototyped and called through (...) types, the
; scratch made by an allocation node (__hpvm__malloc, returned as a pointer and its size),
; the node functions passed through i8* bitcasts, the packed argument struct reached
; through GEPs of its alloca. main checks every block's sum and returns 0 when all are right.
; ModuleID = 'block_dot.c'
source_filename = "block_dot.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.RootIn = type <{ i64*, i64, i64*, i64, i64*, i64, i64, i64 }>

@.str = private unnamed_addr constant [32 x i8] c"block_dot: total %ld, %d wrong\0A\00", align 1

; Function Attrs: nounwind uwtable
define dso_local void @allocate_scratch(i64 %bytes_scratch) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  %call = tail call i8* @__hpvm__malloc(i64 %bytes_scratch) #4
  tail call void (i32, ...) @__hpvm__return(i32 2, i8* %call, i64 %bytes_scratch) #4
  ret void
}

declare dso_local void @__hpvm__hint(i32) local_unnamed_addr #1

declare dso_local i8* @__hpvm__malloc(i64) local_unnamed_addr #1

declare dso_local void @__hpvm__return(i32, ...) local_unnamed_addr #1

; Function Attrs: nounwind uwtable
define dso_local void @block_dot(i64* %a, i64 %bytes_a, i64* %b, i64 %bytes_b, i64* %sums, i64 %bytes_sums, i64* %scratch, i64 %bytes_scratch) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  tail call void (i32, ...) @__hpvm__attributes(i32 3, i64* %a, i64* %b, i64* %scratch, i32 2, i64* %sums, i64* %scratch) #4
  %call = tail call i8* (...) @__hpvm__getNode() #4
  %call1 = tail call i8* @__hpvm__getParentNode(i8* %call) #4
  %call2 = tail call i64 @__hpvm__getNodeInstanceID_x(i8* %call) #4
  %call3 = tail call i64 @__hpvm__getNumNodeInstances_x(i8* %call) #4
  %call4 = tail call i64 @__hpvm__getNodeInstanceID_x(i8* %call1) #4
  %mul = mul nsw i64 %call4, %call3
  %add = add nsw i64 %mul, %call2
  %arrayidx = getelementptr inbounds i64, i64* %a, i64 %add
  %0 = load i64, i64* %arrayidx, align 8, !tbaa !2
  %arrayidx5 = getelementptr inbounds i64, i64* %b, i64 %add
  %1 = load i64, i64* %arrayidx5, align 8, !tbaa !2
  %mul6 = mul nsw i64 %1, %0
  %arrayidx7 = getelementptr inbounds i64, i64* %scratch, i64 %call2
  store i64 %mul6, i64* %arrayidx7, align 8, !tbaa !2
  tail call void (...) @__hpvm__barrier() #4
  %cmp30 = icmp sgt i64 %call3, 1
  br i1 %cmp30, label %for.body.preheader, label %for.end

for.body.preheader:                               ; preds = %entry
  %div29 = sdiv i64 %call3, 2
  br label %for.body

for.body:                                         ; preds = %for.body.preheader, %if.end
  %stride.031 = phi i64 [ %div, %if.end ], [ %div29, %for.body.preheader ]
  %cmp8 = icmp slt i64 %call2, %stride.031
  br i1 %cmp8, label %if.then, label %if.end

if.then:                                          ; preds = %for.body
  %add9 = add nsw i64 %stride.031, %call2
  %arrayidx10 = getelementptr inbounds i64, i64* %scratch, i64 %add9
  %2 = load i64, i64* %arrayidx10, align 8, !tbaa !2
  %3 = load i64, i64* %arrayidx7, align 8, !tbaa !2
  %add12 = add nsw i64 %3, %2
  store i64 %add12, i64* %arrayidx7, align 8, !tbaa !2
  br label %if.end

if.end:                                           ; preds = %if.then, %for.body
  tail call void (...) @__hpvm__barrier() #4
  %div = sdiv i64 %stride.031, 2
  %cmp = icmp sgt i64 %stride.031, 1
  br i1 %cmp, label %for.body, label %for.end

for.end:                                          ; preds = %if.end, %entry
  %cmp15 = icmp eq i64 %call2, 0
  br i1 %cmp15, label %if.then16, label %if.end19

if.then16:                                        ; preds = %for.end
  %4 = load i64, i64* %scratch, align 8, !tbaa !2
  %arrayidx18 = getelementptr inbounds i64, i64* %sums, i64 %call4
  store i64 %4, i64* %arrayidx18, align 8, !tbaa !2
  br label %if.end19

if.end19:                                         ; preds = %if.then16, %for.end
  ret void
}

declare dso_local void @__hpvm__attributes(i32, ...) local_unnamed_addr #1

declare dso_local i8* @__hpvm__getNode(...) local_unnamed_addr #1

declare dso_local i8* @__hpvm__getParentNode(i8*) local_unnamed_addr #1

declare dso_local i64 @__hpvm__getNodeInstanceID_x(i8*) local_unnamed_addr #1

declare dso_local i64 @__hpvm__getNumNodeInstances_x(i8*) local_unnamed_addr #1

declare dso_local void @__hpvm__barrier(...) local_unnamed_addr #1

; Function Attrs: nounwind uwtable
define dso_local void @block_group(i64* %a, i64 %bytes_a, i64* %b, i64 %bytes_b, i64* %sums, i64 %bytes_sums, i64 %bytes_scratch) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  tail call void (i32, ...) @__hpvm__attributes(i32 2, i64* %a, i64* %b, i32 1, i64* %sums) #4
  %call = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 0, i8* bitcast (void (i64)* @allocate_scratch to i8*)) #4
  %call1 = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 1, i8* bitcast (void (i64*, i64, i64*, i64, i64*, i64, i64*, i64)* @block_dot to i8*), i64 32) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 6, i32 0, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 0, i32 0, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 1, i32 1, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 2, i32 2, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 3, i32 3, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 4, i32 4, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call1, i32 5, i32 5, i32 0) #4
  %call2 = tail call i8* @__hpvm__edge(i8* %call, i8* %call1, i32 1, i32 0, i32 6, i32 0) #4
  %call3 = tail call i8* @__hpvm__edge(i8* %call, i8* %call1, i32 1, i32 1, i32 7, i32 0) #4
  ret void
}

declare dso_local i8* @__hpvm__createNodeND(i32, ...) local_unnamed_addr #1

declare dso_local void @__hpvm__bindIn(i8*, i32, i32, i32) local_unnamed_addr #1

declare dso_local i8* @__hpvm__edge(i8*, i8*, i32, i32, i32, i32) local_unnamed_addr #1

; Function Attrs: nounwind uwtable
define dso_local void @root(i64* %a, i64 %bytes_a, i64* %b, i64 %bytes_b, i64* %sums, i64 %bytes_sums, i64 %bytes_scratch, i64 %blocks) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  tail call void (i32, ...) @__hpvm__attributes(i32 2, i64* %a, i64* %b, i32 1, i64* %sums) #4
  %call = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 1, i8* bitcast (void (i64*, i64, i64*, i64, i64*, i64, i64)* @block_group to i8*), i64 %blocks) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 0, i32 0, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 1, i32 1, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 2, i32 2, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 3, i32 3, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 4, i32 4, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 5, i32 5, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 6, i32 6, i32 0) #4
  ret void
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #0 {
entry:
  %args = alloca %struct.RootIn, align 1
  %call = tail call noalias i8* @malloc(i64 2048) #4
  %0 = bitcast i8* %call to i64*
  %call1 = tail call noalias i8* @malloc(i64 2048) #4
  %1 = bitcast i8* %call1 to i64*
  %call2 = tail call noalias i8* @malloc(i64 64) #4
  %2 = bitcast i8* %call2 to i64*
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %i.062 = phi i64 [ 0, %entry ], [ %inc, %for.body ]
  %rem = urem i64 %i.062, 13
  %sub = add nsw i64 %rem, -6
  %arrayidx = getelementptr inbounds i64, i64* %0, i64 %i.062
  store i64 %sub, i64* %arrayidx, align 8, !tbaa !2
  %rem3 = urem i64 %i.062, 7
  %sub4 = add nsw i64 %rem3, -3
  %arrayidx5 = getelementptr inbounds i64, i64* %1, i64 %i.062
  store i64 %sub4, i64* %arrayidx5, align 8, !tbaa !2
  %inc = add nuw nsw i64 %i.062, 1
  %exitcond64 = icmp eq i64 %inc, 256
  br i1 %exitcond64, label %for.end, label %for.body

for.end:                                          ; preds = %for.body
  tail call void (...) @__hpvm__init() #4
  %3 = bitcast %struct.RootIn* %args to i8*
  call void @llvm.lifetime.start.p0i8(i64 64, i8* nonnull %3) #4
  %a6 = bitcast %struct.RootIn* %args to i64**
  store i64* %0, i64** %a6, align 1, !tbaa !6
  %bytes_a = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 1
  store i64 2048, i64* %bytes_a, align 1, !tbaa !9
  %b7 = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 2
  store i64* %1, i64** %b7, align 1, !tbaa !10
  %bytes_b = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 3
  store i64 2048, i64* %bytes_b, align 1, !tbaa !11
  %sums8 = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 4
  store i64* %2, i64** %sums8, align 1, !tbaa !12
  %bytes_sums = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 5
  store i64 64, i64* %bytes_sums, align 1, !tbaa !13
  %bytes_scratch = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 6
  store i64 256, i64* %bytes_scratch, align 1, !tbaa !14
  %blocks = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 7
  store i64 8, i64* %blocks, align 1, !tbaa !15
  tail call void @llvm_hpvm_track_mem(i8* %call, i64 2048) #4
  tail call void @llvm_hpvm_track_mem(i8* %call1, i64 2048) #4
  tail call void @llvm_hpvm_track_mem(i8* %call2, i64 64) #4
  %call9 = call i8* (i32, ...) @__hpvm__launch(i32 0, void (i64*, i64, i64*, i64, i64*, i64, i64, i64)* nonnull @root, i8* nonnull %3) #4
  call void @__hpvm__wait(i8* %call9) #4
  call void @llvm_hpvm_request_mem(i8* %call2, i64 64) #4
  br label %for.cond11.preheader

for.cond11.preheader:                             ; preds = %for.end, %for.end21
  %blk.061 = phi i64 [ 0, %for.end ], [ %inc25, %for.end21 ]
  %wrong.060 = phi i32 [ 0, %for.end ], [ %spec.select, %for.end21 ]
  %total.059 = phi i64 [ 0, %for.end ], [ %add23, %for.end21 ]
  %mul = shl nsw i64 %blk.061, 5
  br label %for.body13

for.body13:                                       ; preds = %for.body13, %for.cond11.preheader
  %k.057 = phi i64 [ 0, %for.cond11.preheader ], [ %inc20, %for.body13 ]
  %want.056 = phi i64 [ 0, %for.cond11.preheader ], [ %add19, %for.body13 ]
  %add = add nuw nsw i64 %k.057, %mul
  %arrayidx15 = getelementptr inbounds i64, i64* %0, i64 %add
  %4 = load i64, i64* %arrayidx15, align 8, !tbaa !2
  %arrayidx17 = getelementptr inbounds i64, i64* %1, i64 %add
  %5 = load i64, i64* %arrayidx17, align 8, !tbaa !2
  %mul18 = mul nsw i64 %5, %4
  %add19 = add nsw i64 %mul18, %want.056
  %inc20 = add nuw nsw i64 %k.057, 1
  %exitcond = icmp eq i64 %inc20, 32
  br i1 %exitcond, label %for.end21, label %for.body13

for.end21:                                        ; preds = %for.body13
  %arrayidx22 = getelementptr inbounds i64, i64* %2, i64 %blk.061
  %6 = load i64, i64* %arrayidx22, align 8, !tbaa !2
  %cmp = icmp ne i64 %6, %add19
  %inc24 = zext i1 %cmp to i32
  %spec.select = add nuw nsw i32 %wrong.060, %inc24
  %add23 = add nsw i64 %6, %total.059
  %inc25 = add nuw nsw i64 %blk.061, 1
  %exitcond63 = icmp eq i64 %inc25, 8
  br i1 %exitcond63, label %for.end26, label %for.cond11.preheader

for.end26:                                        ; preds = %for.end21
  call void @llvm_hpvm_untrack_mem(i8* %call) #4
  call void @llvm_hpvm_untrack_mem(i8* %call1) #4
  call void @llvm_hpvm_untrack_mem(i8* %call2) #4
  call void (...) @__hpvm__cleanup() #4
  %call27 = call i32 (i8*, ...) @printf(i8* getelementptr inbounds ([32 x i8], [32 x i8]* @.str, i64 0, i64 0), i64 %add23, i32 %spec.select)
  %cmp28 = icmp ne i32 %spec.select, 0
  %conv = zext i1 %cmp28 to i32
  call void @llvm.lifetime.end.p0i8(i64 64, i8* nonnull %3) #4
  ret i32 %conv
}

; Function Attrs: nofree nounwind
declare dso_local noalias i8* @malloc(i64) local_unnamed_addr #2

declare dso_local void @__hpvm__init(...) local_unnamed_addr #1

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #3

declare dso_local void @llvm_hpvm_track_mem(i8*, i64) local_unnamed_addr #1

declare dso_local i8* @__hpvm__launch(i32, ...) local_unnamed_addr #1

declare dso_local void @__hpvm__wait(i8*) local_unnamed_addr #1

declare dso_local void @llvm_hpvm_request_mem(i8*, i64) local_unnamed_addr #1

declare dso_local void @llvm_hpvm_untrack_mem(i8*) local_unnamed_addr #1

declare dso_local void @__hpvm__cleanup(...) local_unnamed_addr #1

; Function Attrs: nofree nounwind
declare dso_local i32 @printf(i8* nocapture readonly, ...) local_unnamed_addr #2

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #3

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #2 = { nofree nounwind "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #3 = { argmemonly nounwind }
attributes #4 = { nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0 (https://gitlab.engr.illinois.edu/llvm/hpvm-release.git)"}
!2 = !{!3, !3, i64 0}
!3 = !{!"long", !4, i64 0}
!4 = !{!"omnipotent char", !5, i64 0}
!5 = !{!"Simple C/C++ TBAA"}
!6 = !{!7, !8, i64 0}
!7 = !{!"", !8, i64 0, !3, i64 8, !8, i64 16, !3, i64 24, !8, i64 32, !3, i64 40, !3, i64 48, !3, i64 56}
!8 = !{!"any pointer", !4, i64 0}
!9 = !{!7, !3, i64 8}
!10 = !{!7, !8, i64 16}
!11 = !{!7, !3, i64 24}
!12 = !{!7, !8, i64 32}
!13 = !{!7, !3, i64 40}
!14 = !{!7, !3, i64 48}
!15 = !{!7, !3, i64 56}
