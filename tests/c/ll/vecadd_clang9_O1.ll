; hpvm's own test program: an HPVM-C vector add (C[i] = A[i] + B[i] over a 1-D leaf of n
; instances) written as clang 9 -O1 -S -emit-llvm writes it with HPVM's hpvm.h, before
; GenHPVM: __hpvm__* calls, typed pointers, unprototyped __hpvm__getNode() / __hpvm__init()
; called through (...) types, the node function passed to __hpvm__createNodeND through an
; i8* bitcast, the packed argument struct reached through bitcasts of its alloca, lifetime
; markers with .p0i8 manglings. main checks C and returns 0 when every element is right.
; ModuleID = 'vecadd.c'
source_filename = "vecadd.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.RootIn = type <{ float*, i64, float*, i64, float*, i64, i64 }>

@.str = private unnamed_addr constant [19 x i8] c"vecadd: %d errors\0A\00", align 1

; Function Attrs: nounwind uwtable
define dso_local void @vecAdd(float* %A, i64 %bytesA, float* %B, i64 %bytesB, float* %C, i64 %bytesC) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  tail call void (i32, ...) @__hpvm__attributes(i32 2, float* %A, float* %B, i32 1, float* %C) #4
  %call = tail call i8* (...) @__hpvm__getNode() #4
  %call1 = tail call i64 @__hpvm__getNodeInstanceID_x(i8* %call) #4
  %arrayidx = getelementptr inbounds float, float* %A, i64 %call1
  %0 = load float, float* %arrayidx, align 4, !tbaa !2
  %arrayidx2 = getelementptr inbounds float, float* %B, i64 %call1
  %1 = load float, float* %arrayidx2, align 4, !tbaa !2
  %add = fadd float %0, %1
  %arrayidx3 = getelementptr inbounds float, float* %C, i64 %call1
  store float %add, float* %arrayidx3, align 4, !tbaa !2
  tail call void (i32, ...) @__hpvm__return(i32 1, i64 %bytesC) #4
  ret void
}

declare dso_local void @__hpvm__hint(i32) local_unnamed_addr #1

declare dso_local void @__hpvm__attributes(i32, ...) local_unnamed_addr #1

declare dso_local i8* @__hpvm__getNode(...) local_unnamed_addr #1

declare dso_local i64 @__hpvm__getNodeInstanceID_x(i8*) local_unnamed_addr #1

declare dso_local void @__hpvm__return(i32, ...) local_unnamed_addr #1

; Function Attrs: nounwind uwtable
define dso_local void @root(float* %A, i64 %bytesA, float* %B, i64 %bytesB, float* %C, i64 %bytesC, i64 %n) #0 {
entry:
  tail call void @__hpvm__hint(i32 1) #4
  tail call void (i32, ...) @__hpvm__attributes(i32 3, float* %A, float* %B, float* %C, i32 1, float* %C) #4
  %call = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 1, i8* bitcast (void (float*, i64, float*, i64, float*, i64)* @vecAdd to i8*), i64 %n) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 0, i32 0, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 1, i32 1, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 2, i32 2, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 3, i32 3, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 4, i32 4, i32 0) #4
  tail call void @__hpvm__bindIn(i8* %call, i32 5, i32 5, i32 0) #4
  tail call void @__hpvm__bindOut(i8* %call, i32 0, i32 0, i32 0) #4
  ret void
}

declare dso_local i8* @__hpvm__createNodeND(i32, ...) local_unnamed_addr #1

declare dso_local void @__hpvm__bindIn(i8*, i32, i32, i32) local_unnamed_addr #1

declare dso_local void @__hpvm__bindOut(i8*, i32, i32, i32) local_unnamed_addr #1

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #0 {
entry:
  %args = alloca %struct.RootIn, align 1
  %call = tail call noalias i8* @malloc(i64 4000) #4
  %0 = bitcast i8* %call to float*
  %call1 = tail call noalias i8* @malloc(i64 4000) #4
  %1 = bitcast i8* %call1 to float*
  %call2 = tail call noalias i8* @malloc(i64 4000) #4
  %2 = bitcast i8* %call2 to float*
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %i.036 = phi i64 [ 0, %entry ], [ %inc, %for.body ]
  %conv = sitofp i64 %i.036 to float
  %arrayidx = getelementptr inbounds float, float* %0, i64 %i.036
  store float %conv, float* %arrayidx, align 4, !tbaa !2
  %mul = fmul float %conv, 2.000000e+00
  %arrayidx5 = getelementptr inbounds float, float* %1, i64 %i.036
  store float %mul, float* %arrayidx5, align 4, !tbaa !2
  %arrayidx6 = getelementptr inbounds float, float* %2, i64 %i.036
  store float 0.000000e+00, float* %arrayidx6, align 4, !tbaa !2
  %inc = add nuw nsw i64 %i.036, 1
  %exitcond37 = icmp eq i64 %inc, 1000
  br i1 %exitcond37, label %for.end, label %for.body

for.end:                                          ; preds = %for.body
  tail call void (...) @__hpvm__init() #4
  %3 = bitcast %struct.RootIn* %args to i8*
  call void @llvm.lifetime.start.p0i8(i64 52, i8* nonnull %3) #4
  %A7 = bitcast %struct.RootIn* %args to float**
  store float* %0, float** %A7, align 1, !tbaa !6
  %bytesA = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 1
  store i64 4000, i64* %bytesA, align 1, !tbaa !9
  %B8 = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 2
  store float* %1, float** %B8, align 1, !tbaa !10
  %bytesB = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 3
  store i64 4000, i64* %bytesB, align 1, !tbaa !11
  %C9 = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 4
  store float* %2, float** %C9, align 1, !tbaa !12
  %bytesC = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 5
  store i64 4000, i64* %bytesC, align 1, !tbaa !13
  %n10 = getelementptr inbounds %struct.RootIn, %struct.RootIn* %args, i64 0, i32 6
  store i64 1000, i64* %n10, align 1, !tbaa !14
  tail call void @llvm_hpvm_track_mem(i8* %call, i64 4000) #4
  tail call void @llvm_hpvm_track_mem(i8* %call1, i64 4000) #4
  tail call void @llvm_hpvm_track_mem(i8* %call2, i64 4000) #4
  %call11 = call i8* (i32, ...) @__hpvm__launch(i32 0, void (float*, i64, float*, i64, float*, i64, i64)* nonnull @root, i8* nonnull %3) #4
  call void @__hpvm__wait(i8* %call11) #4
  call void @llvm_hpvm_request_mem(i8* %call2, i64 4000) #4
  br label %for.body15

for.body15:                                       ; preds = %for.body15, %for.end
  %i12.035 = phi i64 [ 0, %for.end ], [ %inc24, %for.body15 ]
  %errors.034 = phi i32 [ 0, %for.end ], [ %spec.select, %for.body15 ]
  %arrayidx16 = getelementptr inbounds float, float* %2, i64 %i12.035
  %4 = load float, float* %arrayidx16, align 4, !tbaa !2
  %conv17 = sitofp i64 %i12.035 to float
  %mul18 = fmul float %conv17, 3.000000e+00
  %cmp19 = fcmp une float %4, %mul18
  %inc21 = zext i1 %cmp19 to i32
  %spec.select = add nuw nsw i32 %errors.034, %inc21
  %inc24 = add nuw nsw i64 %i12.035, 1
  %exitcond = icmp eq i64 %inc24, 1000
  br i1 %exitcond, label %for.end25, label %for.body15

for.end25:                                        ; preds = %for.body15
  call void @llvm_hpvm_untrack_mem(i8* %call) #4
  call void @llvm_hpvm_untrack_mem(i8* %call1) #4
  call void @llvm_hpvm_untrack_mem(i8* %call2) #4
  call void (...) @__hpvm__cleanup() #4
  %call26 = call i32 (i8*, ...) @printf(i8* getelementptr inbounds ([19 x i8], [19 x i8]* @.str, i64 0, i64 0), i32 %spec.select)
  %cmp27 = icmp ne i32 %spec.select, 0
  %conv28 = zext i1 %cmp27 to i32
  call void @llvm.lifetime.end.p0i8(i64 52, i8* nonnull %3) #4
  ret i32 %conv28
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
!1 = !{!"clang version 9.0.0"}
!2 = !{!3, !3, i64 0}
!3 = !{!"float", !4, i64 0}
!4 = !{!"omnipotent char", !5, i64 0}
!5 = !{!"Simple C/C++ TBAA"}
!6 = !{!7, !8, i64 0}
!7 = !{!"", !8, i64 0, !15, i64 8, !8, i64 16, !15, i64 24, !8, i64 32, !15, i64 40, !15, i64 48}
!8 = !{!"any pointer", !4, i64 0}
!9 = !{!7, !15, i64 8}
!10 = !{!7, !8, i64 16}
!11 = !{!7, !15, i64 24}
!12 = !{!7, !8, i64 32}
!13 = !{!7, !15, i64 40}
!14 = !{!7, !15, i64 48}
!15 = !{!"long", !4, i64 0}
